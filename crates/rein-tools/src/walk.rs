//! The file walk shared by glob and grep: hidden files skipped, `.gitignore`
//! and `.ignore` honoured even outside a git repository, entries in path
//! order, and nothing behind the session's read fence (credential stores,
//! `$REIN_HOME`) entered or listed, even when the walk starts above them.

use std::path::Path;

use ignore::WalkBuilder;
use rein_core::ReadFence;

/// A walker over everything under `root` that is not hidden, ignored or
/// fenced off by `fence`.
pub(crate) fn walker(root: &Path, fence: ReadFence) -> ignore::Walk {
    WalkBuilder::new(root)
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| !fence.fences(e.path()))
        .build()
}
