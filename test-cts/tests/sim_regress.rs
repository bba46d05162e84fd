//! The simulator in CI: the regression list (`seeds.regress`), the control on the 2013 scenario,
//! determinism, and a few hundred random seeds. Random seeds start at `$CTS_SIM_SEED_BASE` or at a
//! base derived from the clock, printed so that a failure can be rerun.

use std::path::PathBuf;

use test_cts::sim::options::{PlannerKind, Profile};
use test_cts::sim::{Report, run_scenario_2013, run_seed};

const KNOWN_GAPS: [&str; 3] = [
    test_cts::sim::checkers::GAP_OFFLINE_ACTION,
    test_cts::sim::checkers::GAP_MIGRATION,
    test_cts::sim::checkers::GAP_SHUTDOWN,
];

#[derive(Debug)]
enum Expect {
    Clean,
    /// Clean, and no stall: every transition that ended without an abort left nothing to do.
    Settles,
    /// Clean, with stalls, every one of them Pacemaker's own (`Stats::faithful_stalls`).
    StallsFaithfully,
    NoNew,
    Gap(String),
    Caught(String),
}

#[derive(Debug)]
struct Line {
    what: String,
    profile: Profile,
    planner: PlannerKind,
    expect: Expect,
}

fn regress_lines() -> Vec<Line> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("seeds.regress");
    let text = std::fs::read_to_string(&path).expect("seeds.regress is readable");
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            f.len(),
            4,
            "seeds.regress line {}: four fields: {raw}",
            i + 1
        );
        let profile =
            Profile::parse(f[1]).unwrap_or_else(|| panic!("line {}: profile {}", i + 1, f[1]));
        let planner =
            PlannerKind::parse(f[2]).unwrap_or_else(|| panic!("line {}: planner {}", i + 1, f[2]));
        let expect = match f[3] {
            "clean" => Expect::Clean,
            "settles" => Expect::Settles,
            "stalls-faithfully" => Expect::StallsFaithfully,
            "no-new" => Expect::NoNew,
            e if e.starts_with("gap:") => Expect::Gap(e[4..].to_string()),
            e if e.starts_with("caught:") => Expect::Caught(e[7..].to_string()),
            e => panic!("line {}: unknown expectation {e}", i + 1),
        };
        out.push(Line {
            what: f[0].to_string(),
            profile,
            planner,
            expect,
        });
    }
    out
}

fn run(line: &Line) -> Report {
    if line.what == "scenario-2013" {
        return run_scenario_2013(line.planner, line.profile);
    }
    let seed: u64 = line.what.parse().expect("a seed number");
    run_seed(seed, line.planner, line.profile)
}

/// None when the report meets the expectation, else why not.
fn judge(line: &Line, r: &Report) -> Option<String> {
    let v = r.violation.as_ref();
    let gap = v.and_then(|v| v.known_gap);
    let fail = |why: &str| {
        Some(format!(
            "{} ({}): {why}\n{}",
            line.what,
            line.profile.name(),
            r.render_failure()
        ))
    };
    match &line.expect {
        Expect::Clean if v.is_some() => fail("expected clean"),
        Expect::Settles if v.is_some() => fail("expected clean and no stall"),
        Expect::Settles if r.stall.is_some() => fail(&format!(
            "expected no stall: {}",
            r.stall.as_deref().unwrap_or_default()
        )),
        Expect::StallsFaithfully if v.is_some() => fail("expected clean"),
        Expect::StallsFaithfully if r.stall.is_none() => {
            fail("expected a faithful stall: the run no longer stalls; make the line `settles`")
        }
        Expect::StallsFaithfully if r.stats.faithful_stalls != r.stats.stalls => fail(&format!(
            "expected only faithful stalls, {} of {} are: {}",
            r.stats.faithful_stalls,
            r.stats.stalls,
            r.stall.as_deref().unwrap_or_default()
        )),
        Expect::NoNew if v.is_some() && !gap.is_some_and(|g| KNOWN_GAPS.contains(&g)) => {
            fail("a violation that is not a known pengine gap")
        }
        Expect::Gap(name) if gap != Some(name.as_str()) => match v {
            None => fail(&format!(
                "known gap {name} no longer fires: if pengine fixed it, change this line of seeds.regress to `clean`"
            )),
            Some(_) => fail(&format!("expected known gap {name}")),
        },
        Expect::Caught(checker) if v.is_none_or(|v| v.checker != checker) => {
            fail(&format!("the control must be caught by {checker}"))
        }
        _ => None,
    }
}

#[test]
fn regression_list_meets_its_expectations() {
    let lines = regress_lines();
    assert!(
        lines.len() >= 10,
        "the list holds the seeds that ever failed"
    );
    let mut failures = Vec::new();
    for line in &lines {
        let r = run(line);
        if let Some(f) = judge(line, &r) {
            failures.push(f);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn control_is_caught_on_the_2013_scenario_and_the_scenario_is_the_2013_one() {
    let r = run_scenario_2013(PlannerKind::Pacemaker10, Profile::Full);
    let v = r
        .violation
        .as_ref()
        .expect("the Pacemaker 1.0 model must be caught");
    assert_eq!(v.checker, "two-nodes", "{}", r.render_failure());
    assert!(v.message.starts_with("vm1 runs on "), "{}", v.message);
    // The scenario really is the 2013 one: the constraint went away while migrate_to ran.
    let at = |needle: &str| {
        r.log
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no log line with {needle:?}:\n{}", r.log.join("\n")))
    };
    let sent = at("vm1 migrate_to ->node2 sent");
    let removed = at("constraint cli-prefer-vm1 removed");
    let done = at("vm1 migrate_to -> rc=0");
    assert!(sent < removed && removed < done, "{}", r.log.join("\n"));
    assert!(
        r.log.iter().all(|l| !l.contains("vm1 migrate_from <-")),
        "migrate_from never ran"
    );
    assert!(
        r.reproduce()
            .contains("--scenario 2013 --planner pacemaker-1.0")
    );
    let failure = r.render_failure();
    for part in [
        "VIOLATION seed=2013",
        "SEED=2013 planner=pacemaker-1.0",
        "event log:",
        "reproduce with: ",
    ] {
        assert!(failure.contains(part), "{part} missing from:\n{failure}");
    }
}

#[test]
fn a_seed_reproduces_its_run_exactly() {
    for seed in [5, 77, 300] {
        let a = run_seed(seed, PlannerKind::Pengine, Profile::Full);
        let b = run_seed(seed, PlannerKind::Pengine, Profile::Full);
        assert_eq!(a.log, b.log, "seed {seed}");
        assert_eq!(a.stats.events, b.stats.events);
        assert!(a.stats.events > 20, "seed {seed} did something");
    }
    let a = run_seed(5, PlannerKind::Pengine, Profile::Full);
    let c = run_seed(6, PlannerKind::Pengine, Profile::Full);
    assert_ne!(a.log, c.log, "different seeds, different runs");
}

fn seed_base() -> u64 {
    if let Some(b) = std::env::var("CTS_SIM_SEED_BASE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return b;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs().wrapping_mul(2_654_435_761) % 1_000_000_000)
        .unwrap_or(1)
}

/// Runs seeds on two threads (the CI machine has two cores).
fn run_random(base: u64, count: u64, profile: Profile) -> Vec<Report> {
    let seeds: Vec<u64> = (base..base + count).collect();
    std::thread::scope(|s| {
        let halves: Vec<_> = seeds
            .chunks(seeds.len().div_ceil(2))
            .map(|c| {
                s.spawn(move || {
                    c.iter()
                        .map(|&seed| run_seed(seed, PlannerKind::Pengine, profile))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("seed thread"))
            .collect()
    })
}

/// Every violation must be a known, labelled pengine gap; the count of those is printed.
fn only_known_gaps(reports: &[Report], profile: &str) {
    let gaps = reports.iter().filter(|r| r.violation.is_some()).count();
    let events: u64 = reports.iter().map(|r| r.stats.events).sum();
    eprintln!(
        "seeds={} events={events} known-gap hits={gaps}",
        reports.len()
    );
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| {
            r.violation
                .as_ref()
                .is_some_and(|v| !v.known_gap.is_some_and(|g| KNOWN_GAPS.contains(&g)))
        })
        .map(|r| {
            format!(
                "{}\nadd `{} {profile} pengine no-new` to test-cts/seeds.regress once fixed",
                r.render_failure(),
                r.options.seed
            )
        })
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

#[test]
fn random_seeds_without_migration_show_only_known_gaps() {
    let base = seed_base();
    eprintln!(
        "random seeds (no-migrate): {base}..{} (rerun with CTS_SIM_SEED_BASE={base})",
        base + 199
    );
    only_known_gaps(&run_random(base, 200, Profile::NoMigrate), "no-migrate");
}

/// The default profile (the cluster as Highlander runs it): no violation at all, labelled or not.
#[test]
fn random_seeds_in_the_atomic_model_are_clean() {
    let base = seed_base() + 250_000_000;
    eprintln!(
        "random seeds (atomic): {base}..{} (rerun with CTS_SIM_SEED_BASE={})",
        base + 149,
        base - 250_000_000
    );
    let reports = run_random(base, 150, Profile::Atomic);
    let events: u64 = reports.iter().map(|r| r.stats.events).sum();
    eprintln!("seeds={} events={events}", reports.len());
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| r.violation.is_some())
        .map(|r| {
            format!(
                "{}\nadd `{} atomic pengine clean` to test-cts/seeds.regress once fixed",
                r.render_failure(),
                r.options.seed
            )
        })
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

#[test]
fn random_seeds_with_migration_show_only_known_gaps() {
    let base = seed_base() + 500_000_000;
    eprintln!(
        "random seeds (full): {base}..{} (rerun with CTS_SIM_SEED_BASE={})",
        base + 79,
        base - 500_000_000
    );
    only_known_gaps(&run_random(base, 80, Profile::Full), "full");
}
