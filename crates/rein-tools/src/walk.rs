//! The file walk shared by glob and grep: hidden files skipped, `.gitignore`
//! and `.ignore` honoured even outside a git repository, entries in path
//! order.

use std::path::Path;

use ignore::WalkBuilder;

/// A walker over everything under `root` that is not hidden or ignored.
pub(crate) fn walker(root: &Path) -> ignore::Walk {
    WalkBuilder::new(root)
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}
