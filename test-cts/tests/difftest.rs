//! Differential testing in CI: a fixed block of generated CIBs compared with crm_simulate
//! (Pacemaker 2.1.5) must stay at or above the committed identical rates, every generated CIB
//! must pass crm_verify.

use std::path::PathBuf;
use test_cts::diff::{generator, report, run};

/// The fixed block CI runs.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=60;
/// Identical rates (percent) measured on that block; a fix raises them, a regression fails.
const FLOORS: [(&str, f64); 5] = [
    ("summary", 55.0),
    ("graph", 55.0),
    ("dot", 50.0),
    ("scores", 80.0),
    ("all", 45.0),
];

/// Builds the `pengine` binary into this test's target directory and returns its path.
fn pengine() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("profile dir");
    let target = profile_dir.parent().expect("target dir");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["build", "--quiet", "-p", "pengine", "--bin", "pengine"])
        .arg("--target-dir")
        .arg(target);
    if profile_dir.file_name().and_then(|n| n.to_str()) == Some("release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("cargo build -p pengine");
    assert!(status.success(), "cargo build -p pengine failed");
    profile_dir.join("pengine")
}

fn candidate() -> run::Tool {
    run::Tool::parse(&format!("{} simulate", pengine().display())).expect("candidate")
}

#[test]
fn fixed_block_stays_above_the_floors() {
    let seeds: Vec<u64> = SEEDS.collect();
    let result = report::run_seeds(&candidate(), &seeds, 2, None).expect("run");
    println!("{}", result.render(10));
    assert!(
        result.invalid().is_empty(),
        "generated CIBs rejected: {:?}",
        result.invalid()
    );
    for (name, same, total) in result.check_rates() {
        let floor = FLOORS.iter().find(|(n, _)| *n == name).expect("floor").1;
        let pct = 100.0 * same as f64 / total as f64;
        assert!(
            pct >= floor,
            "{name}: {same}/{total} ({pct:.1}%) below the floor {floor}%"
        );
    }
}

#[test]
fn generation_is_deterministic() {
    for seed in [1, 7, 42] {
        assert_eq!(generator::generate(seed).xml, generator::generate(seed).xml);
    }
    assert_ne!(generator::generate(1).xml, generator::generate(2).xml);
}
