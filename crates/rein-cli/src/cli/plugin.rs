//! The flags of `rein plugin`: install, list, remove, enable and disable
//! Claude Code plugins.

use std::path::PathBuf;

use clap::Subcommand;

/// `rein plugin ...`.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Copy a plugin (a folder with `.claude-plugin/plugin.json`, or a git
    /// repository holding one) into `$REIN_HOME/plugins/NAME/`, pinned by
    /// a digest of its files (and the commit, from git).
    Install {
        /// The plugin's folder, `PLUGIN@MARKETPLACE`, or `GIT-URL[@REF]` (a URL, or a path
        /// ending in `.git`; REF a branch, tag or commit).
        path: PathBuf,
    },
    /// The installed plugins: name, version, whether enabled, where from,
    /// and the parts each has.
    List {
        /// One JSON object per plugin.
        #[arg(long)]
        json: bool,
    },
    /// Marketplaces: folders or git repositories listing plugins
    /// (`.claude-plugin/marketplace.json`); `install PLUGIN@MARKETPLACE`.
    #[command(subcommand)]
    Marketplace(MarketplaceCommand),
    /// Delete an installed plugin and its files.
    Remove { name: String },
    /// Fetch a plugin again from where it was installed from, show what
    /// would change, and ask before putting it in place.
    Update {
        name: String,
        /// Accept the changes without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Load a disabled plugin's parts again.
    Enable { name: String },
    /// Keep a plugin installed but load none of its parts.
    Disable { name: String },
}

/// `rein plugin marketplace ...`.
#[derive(Debug, Subcommand)]
pub enum MarketplaceCommand {
    /// Copy a marketplace (a folder or `GIT-URL[@REF]`) in and record it.
    Add { source: String },
    /// The marketplaces added, and the plugins each offers.
    List,
    /// Forget a marketplace (its installed plugins stay).
    Remove { name: String },
}

impl From<PluginCommand> for crate::plugin::Action {
    fn from(cmd: PluginCommand) -> Self {
        use crate::plugin::Action;
        match cmd {
            PluginCommand::Install { path } => Action::Install(path),
            PluginCommand::List { json } => Action::List { json },
            PluginCommand::Remove { name } => Action::Remove(name),
            PluginCommand::Marketplace(MarketplaceCommand::Add { source }) => {
                Action::MarketAdd(source)
            }
            PluginCommand::Marketplace(MarketplaceCommand::List) => Action::MarketList,
            PluginCommand::Marketplace(MarketplaceCommand::Remove { name }) => {
                Action::MarketRemove(name)
            }
            PluginCommand::Update { name, yes } => Action::Update { name, yes },
            PluginCommand::Enable { name } => Action::Enable(name, true),
            PluginCommand::Disable { name } => Action::Enable(name, false),
        }
    }
}
