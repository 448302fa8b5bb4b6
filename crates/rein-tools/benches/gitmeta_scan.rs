//! What the git metadata check costs each command that can write: one scan
//! of the workspace before the command and one after (plus the comparison),
//! on a tree of about 100 000 files in 5 000 folders with a few nested
//! repositories, or on the folder `REIN_SCAN_DIR` names (a real project).
//!
//! `cargo bench -p rein-tools --bench gitmeta_scan`

#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use rein_tools::sandbox::gitmeta;

/// 50 top folders × 100 folders × 20 files, and a repository in every
/// tenth top folder (with hooks and objects the scan must not enter).
fn synthetic(root: &Path) {
    for a in 0..50 {
        for b in 0..100 {
            let dir = root.join(format!("d{a}/e{b}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            for f in 0..20 {
                std::fs::write(dir.join(format!("f{f}.rs")), "x").expect("write");
            }
        }
        if a % 10 == 0 {
            let git = root.join(format!("d{a}/.git"));
            for d in ["objects/ab", "refs/heads", "hooks"] {
                std::fs::create_dir_all(git.join(d)).expect("mkdir");
            }
            std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("write");
            std::fs::write(git.join("config"), "[core]\n\tbare = false\n").expect("write");
            std::fs::write(git.join("hooks/pre-commit.sample"), "x").expect("write");
            for o in 0..200 {
                std::fs::write(git.join(format!("objects/ab/{o:038}")), "x").expect("write");
            }
        }
    }
}

fn bench(c: &mut Criterion) {
    let _keep;
    let root: PathBuf = match std::env::var_os("REIN_SCAN_DIR") {
        Some(dir) => std::fs::canonicalize(dir).expect("REIN_SCAN_DIR"),
        None => {
            let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
            synthetic(dir.path());
            let root = std::fs::canonicalize(dir.path()).expect("canonical");
            _keep = dir;
            root
        }
    };
    let first = gitmeta::scan(&root);
    eprintln!(
        "tree {}: {} folders listed, {} git paths watched",
        root.display(),
        first.folders,
        first.len()
    );
    c.bench_function("git metadata: scan before + check after", |b| {
        b.iter(|| {
            let before = gitmeta::scan(black_box(&root));
            black_box(gitmeta::restore(&root, &before))
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
