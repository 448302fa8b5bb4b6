//! The tools a gate offers: each tool with its spec and access, found by
//! name, and the tools still arriving. A registry is a value: adding tools
//! makes a new one that shares every entry with the old (a run keeps the
//! registry its tool list was made from), so adding is a few pointer
//! copies, never a rebuild of the gate.

use std::collections::HashMap;
use std::sync::Arc;

use crate::permission::PermissionMode;
use crate::schema::ToolSpec;
use crate::tool::{LateTools, Tool, ToolAccess};

/// One offered tool, with what the gate asks of it on every call.
pub(crate) struct Registered {
    pub tool: Arc<dyn Tool>,
    pub spec: ToolSpec,
    pub access: ToolAccess,
}

impl Registered {
    fn new(tool: Arc<dyn Tool>) -> Registered {
        Registered {
            access: tool.access(),
            spec: tool.spec(),
            tool,
        }
    }
}

/// The tools of one gate, in the order they were added.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<Registered>>,
    by_name: HashMap<String, usize>,
    /// Where a call naming a tool the registry lacks waits for it to arrive.
    late: Option<Arc<dyn LateTools>>,
}

impl ToolRegistry {
    /// A registry of `tools`; a later tool with the same name replaces an
    /// earlier one.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
        let mut registry = ToolRegistry::default();
        registry.add(tools);
        registry
    }

    /// Add `tools`, each replacing one of the same name.
    pub fn add(&mut self, tools: Vec<Arc<dyn Tool>>) {
        for tool in tools {
            self.insert(Arc::new(Registered::new(tool)));
        }
    }

    fn insert(&mut self, entry: Arc<Registered>) {
        match self.by_name.get(&entry.spec.name) {
            Some(&i) => self.tools[i] = entry,
            None => {
                self.by_name
                    .insert(entry.spec.name.clone(), self.tools.len());
                self.tools.push(entry);
            }
        }
    }

    /// This registry with `tools` added (replacing any of the same name).
    pub fn with_added(&self, tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
        let mut registry = self.clone();
        registry.add(tools);
        registry
    }

    /// This registry without the tools `drop` names, and with `tools`
    /// added; tools still arriving stay.
    pub fn with_replaced(
        &self,
        drop: impl Fn(&str) -> bool,
        tools: Vec<Arc<dyn Tool>>,
    ) -> ToolRegistry {
        let mut registry = self.narrowed(|name| !drop(name));
        registry.late = self.late.clone();
        registry.add(tools);
        registry
    }

    /// The tools `keep` accepts. Tools still arriving are not offered: a
    /// call naming one would pass by `keep` (see [`ToolRegistry::for_child`]).
    pub fn narrowed(&self, keep: impl Fn(&str) -> bool) -> ToolRegistry {
        let mut registry = ToolRegistry::default();
        for entry in self.tools.iter().filter(|t| keep(&t.spec.name)) {
            registry.insert(entry.clone());
        }
        registry
    }

    /// The tools `keep` accepts, now and as they arrive: a child engine's.
    pub fn for_child(&self, keep: Arc<dyn Fn(&str) -> bool + Send + Sync>) -> ToolRegistry {
        let mut registry = self.narrowed(|name| keep(name));
        registry.late = self
            .late
            .clone()
            .map(|inner| Arc::new(KeptLate { inner, keep }) as Arc<dyn LateTools>);
        registry
    }

    /// Ask `late` for a tool a call names that this registry does not have.
    pub fn set_late_tools(&mut self, late: Arc<dyn LateTools>) {
        self.late = Some(late);
    }

    /// What the named tool does, if there is one.
    pub fn access(&self, name: &str) -> Option<ToolAccess> {
        self.get(name).map(|t| t.access)
    }

    /// The tools the model may see: in plan mode none that write (programs
    /// run there in a read-only sandbox).
    pub fn specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| mode.offers(t.access))
            .map(|t| t.spec.clone())
            .collect()
    }

    /// The names of the tools that change files.
    pub(crate) fn writers(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .filter(|t| t.access == ToolAccess::Write)
            .map(|t| t.spec.name.as_str())
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The named tool; one still arriving (a server still starting) is
    /// waited for, bounded by its source. None: there is no such tool.
    pub(crate) async fn find(&self, name: &str) -> Option<Arc<Registered>> {
        if let Some(entry) = self.get(name) {
            return Some(entry.clone());
        }
        let tool = self.late.as_ref()?.wait_for(name).await?;
        Some(Arc::new(Registered::new(tool)))
    }
}

/// Tools still arriving, as a child engine may see them: only those its
/// policy keeps.
struct KeptLate {
    inner: Arc<dyn LateTools>,
    keep: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

#[async_trait::async_trait]
impl LateTools for KeptLate {
    async fn wait_for(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if !(self.keep)(name) {
            return None;
        }
        self.inner.wait_for(name).await
    }
}
