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

    /// Where the named tool says `args` work (see
    /// [`crate::tool::Tool::touches`]).
    pub fn touches(&self, name: &str, args: &serde_json::Value) -> Vec<std::path::PathBuf> {
        self.get(name)
            .map(|t| t.tool.touches(args))
            .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolContext, ToolError, ToolOutput};
    use serde_json::{Value, json};

    struct Named(&'static str, ToolAccess, &'static str);

    #[async_trait::async_trait]
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: self.0.to_string(),
                description: self.2.to_string(),
                parameters: json!({"type": "object"}),
            }
        }

        fn access(&self) -> ToolAccess {
            self.1
        }

        async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::ok(self.2))
        }
    }

    fn tool(name: &'static str, access: ToolAccess, what: &'static str) -> Arc<dyn Tool> {
        Arc::new(Named(name, access, what))
    }

    /// Tools that arrive when asked for by name.
    struct Arriving;

    #[async_trait::async_trait]
    impl LateTools for Arriving {
        async fn wait_for(&self, name: &str) -> Option<Arc<dyn Tool>> {
            let name: &'static str = match name {
                "mcp__a__x" => "mcp__a__x",
                "mcp__b__y" => "mcp__b__y",
                _ => return None,
            };
            Some(tool(name, ToolAccess::Execute, "late"))
        }
    }

    #[test]
    fn added_tools_replace_those_of_their_name_in_place_and_leave_the_old_registry_as_it_was() {
        let old = ToolRegistry::new(vec![
            tool("read", ToolAccess::Read, "v1"),
            tool("write", ToolAccess::Write, "v1"),
        ]);
        let new = old.with_added(vec![
            tool("read", ToolAccess::Read, "v2"),
            tool("run", ToolAccess::Execute, "v1"),
        ]);
        let described = |r: &ToolRegistry| -> Vec<String> {
            r.specs(PermissionMode::Default)
                .into_iter()
                .map(|s| format!("{}:{}", s.name, s.description))
                .collect()
        };
        assert_eq!(described(&new), ["read:v2", "write:v1", "run:v1"]);
        assert_eq!(described(&old), ["read:v1", "write:v1"]);
        // The tools that were there are shared, not rebuilt.
        assert!(Arc::ptr_eq(
            old.get("write").unwrap(),
            new.get("write").unwrap()
        ));
        assert_eq!(
            new.specs(PermissionMode::Plan)
                .into_iter()
                .map(|s| s.name)
                .collect::<Vec<_>>(),
            ["read", "run"]
        );
        assert_eq!(new.writers().collect::<Vec<_>>(), ["write"]);
    }

    #[tokio::test]
    async fn a_childs_registry_waits_only_for_the_late_tools_its_policy_keeps() {
        let mut parent = ToolRegistry::new(vec![tool("read", ToolAccess::Read, "v1")]);
        parent.set_late_tools(Arc::new(Arriving));
        assert!(parent.find("mcp__a__x").await.is_some());
        assert!(parent.find("mcp__b__y").await.is_some());

        let child = parent.for_child(Arc::new(|name: &str| name != "mcp__b__y"));
        assert!(child.find("read").await.is_some());
        assert!(child.find("mcp__a__x").await.is_some());
        assert!(child.find("mcp__b__y").await.is_none());

        // Narrowed registries offer no tools still arriving.
        assert!(parent.narrowed(|_| true).find("mcp__a__x").await.is_none());
        // A replaced tool list keeps waiting for them.
        let replaced = parent.with_replaced(|name| name == "read", Vec::new());
        assert!(replaced.find("read").await.is_none());
        assert!(replaced.find("mcp__a__x").await.is_some());
    }
}
