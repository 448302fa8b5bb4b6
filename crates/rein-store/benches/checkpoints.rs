//! Checkpoints of a 10,000-file workspace (small text files in nested
//! folders): the first snapshot, then the cost of a snapshot after one
//! file changed (time, measured by criterion) and how much the shadow
//! repository grows per such snapshot (bytes, printed).
//!
//! Run: `cargo bench -p rein-store --bench checkpoints`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rein_store::Checkpoints;

const TOP: usize = 10;
const MID: usize = 10;
const FILES: usize = 100;

/// `TOP * MID * FILES` files at `work/dX/dY/fileZ.txt`.
fn make_workspace(work: &Path) -> Vec<PathBuf> {
    let mut files = Vec::with_capacity(TOP * MID * FILES);
    for a in 0..TOP {
        for b in 0..MID {
            let dir = work.join(format!("d{a}")).join(format!("d{b}"));
            std::fs::create_dir_all(&dir).unwrap();
            for c in 0..FILES {
                let path = dir.join(format!("file{c}.txt"));
                std::fs::write(&path, format!("line {a} {b} {c}\nsome text\n")).unwrap();
                files.push(path);
            }
        }
    }
    files
}

/// (apparent bytes, allocated bytes) of everything under `dir`.
fn disk_usage(dir: &Path) -> (u64, u64) {
    let mut total = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            let (a, b) = disk_usage(&entry.path());
            total.0 += a;
            total.1 += b;
        } else {
            total.0 += meta.len();
            total.1 += meta.blocks() * 512;
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("ws");
    let files = make_workspace(&work);
    let cp = Checkpoints::open(&tmp.path().join("checkpoints"), &work).unwrap();

    let started = Instant::now();
    cp.snapshot("first").unwrap();
    let (apparent, allocated) = disk_usage(cp.shadow_dir());
    eprintln!(
        "first snapshot of {} files: {:?}; shadow repository {apparent} bytes ({allocated} allocated)",
        files.len(),
        started.elapsed()
    );

    let mut turn = 0usize;
    let mut change_one = || {
        turn += 1;
        let path = &files[(turn * 7919) % files.len()];
        std::fs::write(path, format!("changed in turn {turn}\n")).unwrap();
    };

    let mut group = c.benchmark_group("checkpoints_10k_files");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("snapshot_after_one_file_changed", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                change_one();
                let t = Instant::now();
                cp.snapshot("turn").unwrap();
                spent += t.elapsed();
            }
            spent
        })
    });
    group.bench_function("snapshot_with_nothing_changed", |b| {
        b.iter(|| cp.snapshot("idle").unwrap())
    });
    group.finish();

    let rounds = 50u64;
    let (a0, b0) = disk_usage(cp.shadow_dir());
    for _ in 0..rounds {
        change_one();
        cp.snapshot("turn").unwrap();
    }
    let (a1, b1) = disk_usage(cp.shadow_dir());
    eprintln!(
        "growth per snapshot (one file changed, {rounds} snapshots): {} bytes ({} allocated)",
        (a1 - a0) / rounds,
        (b1 - b0) / rounds
    );
    for _ in 0..rounds {
        cp.snapshot("idle").unwrap();
    }
    let (a2, b2) = disk_usage(cp.shadow_dir());
    eprintln!(
        "growth per snapshot (nothing changed, {rounds} snapshots): {} bytes ({} allocated)",
        (a2 - a1) / rounds,
        (b2 - b1) / rounds
    );
    let started = Instant::now();
    let kept = cp.list().unwrap();
    let dropped = cp.prune(&kept[kept.len() - 10..]).unwrap();
    let (a3, b3) = disk_usage(cp.shadow_dir());
    eprintln!(
        "prune to the last 10 of {} checkpoints ({dropped} dropped): {:?}; shadow repository {a3} bytes ({b3} allocated)",
        kept.len(),
        started.elapsed()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
