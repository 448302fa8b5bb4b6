//! A temporary workspace and a way to call tools the way the gate does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::{
    CancellationToken, InMemorySessionStore, NewSession, SessionStore, Tool, ToolContext,
    ToolError, ToolOutput,
};
use serde_json::Value;
use tempfile::TempDir;

/// Held shared by every tool call these tests make, and alone by the fork
/// bomb test: a bomb saturates the cores and the process table for
/// seconds, which must not decide another test's outcome.
static MACHINE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A share of the machine, for one ordinary call.
pub async fn machine_shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().await
}

/// The whole machine, for a test that floods it (fork bombs).
pub async fn machine_alone() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().await
}

pub struct Env {
    _dir: TempDir,
    pub root: PathBuf,
    pub store: Arc<InMemorySessionStore>,
    pub session: String,
}

impl Env {
    pub async fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let store = Arc::new(InMemorySessionStore::new());
        let session = store
            .create_session(NewSession::default())
            .await
            .unwrap()
            .id;
        Env {
            _dir: dir,
            root,
            store,
            session,
        }
    }

    pub fn ctx(&self) -> ToolContext {
        self.ctx_with(CancellationToken::new())
    }

    pub fn ctx_with(&self, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            workspace: self.root.clone(),
            session_id: self.session.clone(),
            call_id: "call-1".into(),
            cancel,
            session: rein_core::SessionHandle::new(self.store.clone(), self.session.clone()),
            // Tool tests see the tools' own behaviour; the sandbox has its
            // own scenarios.
            sandbox: rein_core::SandboxPolicy {
                mode: rein_core::SandboxMode::Off,
                ..Default::default()
            },
            read_roots: Vec::new(),
            events: None,
        }
    }

    /// Check the arguments against the tool's schema, ask for its locks and
    /// run it, as the gate would (without the gate's own limits).
    pub async fn call(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_with(tool, args, self.ctx()).await
    }

    pub async fn call_with(
        &self,
        tool: &dyn Tool,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        rein_core::schema_check::check(&args, &tool.spec().parameters)
            .map_err(|e| ToolError::new(format!("schema: {e}")))?;
        tool.locks(&args, &ctx)?;
        let _machine = machine_shared().await;
        tool.call(args, ctx).await
    }

    /// The text of a successful, non-error call.
    pub async fn ok(&self, tool: &dyn Tool, args: Value) -> String {
        let out = self.call(tool, args).await.unwrap();
        assert!(!out.is_error, "unexpected error output: {}", out.content);
        out.content
    }

    /// The message of a failed call.
    pub async fn err(&self, tool: &dyn Tool, args: Value) -> String {
        match self.call(tool, args).await {
            Err(e) => e.to_string(),
            Ok(out) => panic!("expected an error, got: {}", out.content),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn exists(&self, rel: &str) -> bool {
        Path::new(&self.path(rel)).exists()
    }
}
