//! How a command whose network is a list of hosts gets that network: a
//! [`NetProxy`] on the host, its folder and the bridge executable bound
//! into the sandbox, and the command started by the bridge
//! ([`super::netbridge`]). Fail closed: when any part is missing, the
//! command runs with no network and a note says why.

use std::ffi::OsString;
use std::sync::Arc;

use rein_core::{NetworkAccess, SandboxPolicy};

use super::SandboxKind;
use super::netbridge::{self, BRIDGE_ARG};
use super::netproxy::{NetProxy, SOCKET_NAME, SystemResolver};

/// Where the proxy's folder appears inside the sandbox (in its private
/// `/tmp`).
const PROXY_DIR: &str = "/tmp/.rein-net";
/// Where the bridge executable appears inside the sandbox.
const BRIDGE_PATH: &str = "/tmp/.rein-net-bridge";

/// What became of a command's network.
#[derive(Default)]
pub(super) struct Route {
    /// The proxy serving it, when it has one.
    pub proxy: Option<NetProxy>,
    /// Why a list of hosts gave it no network, when it did not.
    pub closed: Option<String>,
}

impl Route {
    /// Notes for the command's output: why it had no network, and each
    /// host the proxy refused.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.closed.iter().map(|c| format!("[{c}]")).collect();
        if let Some(p) = &self.proxy {
            notes.extend(p.blocked().into_iter().map(|line| format!("[{line}]")));
        }
        notes
    }
}

/// Set up the network `policy` asks for under `kind`, changing the
/// bubblewrap arguments `args` (which end with `-- bash -c SCRIPT`) when a
/// proxy serves the command.
pub(super) fn route(
    kind: SandboxKind,
    policy: &SandboxPolicy,
    args: Option<&mut Vec<OsString>>,
) -> Route {
    let NetworkAccess::Hosts(hosts) = &policy.network else {
        return Route::default();
    };
    let closed = |why: &str| Route {
        proxy: None,
        closed: Some(format!(
            "network: {why}, so this command had no network at all (the hosts listed in \
             `network` were not reachable)"
        )),
    };
    let (SandboxKind::Bubblewrap, Some(args)) = (kind, args) else {
        return closed("a list of hosts needs the bubblewrap sandbox");
    };
    let Some(exe) = netbridge::executable() else {
        return closed("this program has no network bridge for the sandbox");
    };
    let proxy = match NetProxy::start(hosts.clone(), Arc::new(SystemResolver)) {
        Ok(p) => p,
        Err(e) => return closed(&format!("rein's proxy could not start ({e})")),
    };
    let Some(tail_at) = args.len().checked_sub(4).filter(|&i| args[i] == "--") else {
        return closed("the sandbox's command line had an unexpected shape");
    };
    let tail = args.split_off(tail_at);
    args.extend(
        [
            "--ro-bind".into(),
            proxy.dir().as_os_str().to_owned(),
            PROXY_DIR.into(),
            "--ro-bind".into(),
            exe.as_os_str().to_owned(),
            BRIDGE_PATH.into(),
            "--".into(),
            BRIDGE_PATH.into(),
            BRIDGE_ARG.into(),
            format!("{PROXY_DIR}/{SOCKET_NAME}").into(),
        ]
        .into_iter()
        .chain(tail),
    );
    Route {
        proxy: Some(proxy),
        closed: None,
    }
}
