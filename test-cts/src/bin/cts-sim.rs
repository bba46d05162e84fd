//! cts-sim: runs the deterministic cluster simulator for one seed, a range of seeds, the 2013
//! scenario, or a timed soak; exits 0 only when no checker fired. The last line counts seeds,
//! events and violations.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use test_cts::sim::options::{PlannerKind, Profile};
use test_cts::sim::oracle::{DiffConfig, DiffTally};
use test_cts::sim::{Extras, Report, run_scenario_2013, run_seed_with};

/// Prints a line; a closed pipe (`| head`) ends the program quietly instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(1);
        }
    }};
}

const USAGE: &str = "usage: cts-sim [--seed N | --seeds A..B | --soak MINUTES | --scenario 2013] [--planner pengine|pacemaker-1.0] [--profile atomic|full|no-migrate] [--jobs N] [--verbose] [--dump-cib DIR] [--crm-simulate] [--diff-crm-simulate [--diff-every N] [--diff-out DIR] [--pengine PATH]]\n\
  atomic (default): the VMs as a Highlander cluster runs them (ocf:highlander:VirtualDomain, atomic migration model); every violation fails the run.\n\
  full, no-migrate: pengine's two-phase model (Pacemaker's); violations labelled with a known gap are counted apart (known-gaps=N) and do not fail the run.\n\
  --dump-cib DIR (with --seed): writes every CIB the DC plans from as DIR/seed<N>-T<id>.xml (and -T<id>-idle.xml after a transition ended without an abort), for crm_simulate -x FILE -S.\n\
  --crm-simulate (two-phase profiles): a stall not explained otherwise is checked with crm_simulate (Pacemaker 2.1.5, installed) on the same CIB; when Pacemaker's scheduler has work there too the stall is counted faithful (faithful-stalls=N).\n\
  --diff-crm-simulate (two-phase profiles): on every planner call (every Nth with --diff-every N) the CIB the planner reads goes to `pengine simulate -x CIB -S` (--pengine PATH, default the pengine next to cts-sim) and `crm_simulate -x CIB -S`; their normalised outputs are compared. A seed's first differing CIB is kept in --diff-out DIR (default /tmp/cts-sim-diff) with both outputs (.crm, .pe); the last line tallies the comparisons.";

enum What {
    Seeds(u64, u64),
    Soak(u64),
    Scenario2013,
}

struct Args {
    what: What,
    planner: PlannerKind,
    profile: Profile,
    jobs: usize,
    verbose: bool,
    dump_dir: Option<std::path::PathBuf>,
    crm_simulate: bool,
    diff: Option<DiffConfig>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut what = None;
    let mut planner = PlannerKind::Pengine;
    let mut profile = Profile::Atomic;
    let mut jobs = 1;
    let mut verbose = false;
    let mut dump_dir = None;
    let mut crm_simulate = false;
    let mut diff = false;
    let mut diff_every = 1;
    let mut diff_out = std::path::PathBuf::from("/tmp/cts-sim-diff");
    let mut pengine = None;
    let num = |s: Option<String>, flag: &str| -> Result<u64, String> {
        s.ok_or(format!("{flag} needs a value"))?
            .parse::<u64>()
            .map_err(|e| format!("{flag}: {e}"))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => {
                let n = num(args.next(), "--seed")?;
                what = Some(What::Seeds(n, n));
            }
            "--seeds" => {
                let v = args.next().ok_or("--seeds needs A..B")?;
                let (a, b) = v.split_once("..").ok_or("--seeds needs A..B")?;
                let a = a.parse::<u64>().map_err(|e| format!("--seeds: {e}"))?;
                let b = b.parse::<u64>().map_err(|e| format!("--seeds: {e}"))?;
                if b < a {
                    return Err("--seeds A..B needs A <= B".into());
                }
                what = Some(What::Seeds(a, b));
            }
            "--soak" => what = Some(What::Soak(num(args.next(), "--soak")?)),
            "--scenario" => match args.next().as_deref() {
                Some("2013") => what = Some(What::Scenario2013),
                other => return Err(format!("unknown scenario {other:?} (known: 2013)")),
            },
            "--planner" => {
                let v = args.next().ok_or("--planner needs a name")?;
                planner = PlannerKind::parse(&v).ok_or(format!("unknown planner {v}"))?;
            }
            "--profile" => {
                let v = args.next().ok_or("--profile needs a name")?;
                profile = Profile::parse(&v).ok_or(format!("unknown profile {v}"))?;
            }
            "--jobs" => jobs = num(args.next(), "--jobs")?.clamp(1, 64) as usize,
            "--verbose" | "-v" => verbose = true,
            "--crm-simulate" => crm_simulate = true,
            "--diff-crm-simulate" => diff = true,
            "--diff-every" => diff_every = num(args.next(), "--diff-every")?.max(1),
            "--diff-out" => {
                diff_out =
                    std::path::PathBuf::from(args.next().ok_or("--diff-out needs a directory")?);
            }
            "--pengine" => {
                pengine = Some(std::path::PathBuf::from(
                    args.next().ok_or("--pengine needs a path")?,
                ));
            }
            "--dump-cib" => {
                dump_dir = Some(std::path::PathBuf::from(
                    args.next().ok_or("--dump-cib needs a directory")?,
                ));
            }
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if diff && profile.migration_model() != "two-phase" {
        return Err(
            "--diff-crm-simulate needs a two-phase profile (--profile full|no-migrate)".into(),
        );
    }
    let diff = if diff {
        let pengine = match pengine {
            Some(p) => p,
            None => std::env::current_exe()
                .map_err(|e| format!("cannot find cts-sim's own path: {e}"))?
                .with_file_name("pengine"),
        };
        if !pengine.is_file() {
            return Err(format!(
                "{} not found: build it (cargo build --release -p pengine) or give --pengine PATH",
                pengine.display()
            ));
        }
        std::fs::create_dir_all(&diff_out)
            .map_err(|e| format!("--diff-out {}: {e}", diff_out.display()))?;
        Some(DiffConfig {
            every: diff_every,
            out_dir: diff_out,
            pengine,
        })
    } else {
        None
    };
    Ok(Args {
        what: what.ok_or(USAGE)?,
        planner,
        profile,
        jobs,
        verbose,
        dump_dir,
        crm_simulate,
        diff,
    })
}

#[derive(Default)]
struct Totals {
    seeds: u64,
    events: u64,
    violations: u64,
    /// Two-phase profiles only: violations that match a known pengine gap (Pacemaker's model).
    known_gaps: u64,
    failed_seeds: Vec<u64>,
    gap_seeds: Vec<u64>,
    /// Runs with a stall (see `checkers::on_stall`): not violations.
    stalled_seeds: Vec<u64>,
    /// Of those, runs whose every stall Pacemaker's controller has too (`Stats::faithful_stalls`).
    faithful_stalls: u64,
    /// `--diff-crm-simulate`: the comparisons' tally, and the seeds with a difference.
    diff: DiffTally,
    diff_seeds: Vec<u64>,
}

fn show(r: &Report, verbose: bool, totals: &mut Totals) {
    totals.seeds += 1;
    totals.events += r.stats.events;
    if verbose || r.violation.is_some() {
        if r.violation.is_some() {
            say!("{}", r.render_failure().trim_end());
        } else {
            say!("{}", r.options);
            for l in &r.log {
                say!("{l}");
            }
        }
    }
    if let Some(d) = &r.diff {
        totals.diff.add(d);
        if let Some(first) = &d.first {
            totals.diff_seeds.push(r.options.seed);
            say!(
                "seed {}: DIFF crm_simulate ({} of {} planner calls compared differ) first at {first}",
                r.options.seed,
                d.differing,
                d.compared
            );
        }
    }
    let two_phase = r.options.profile.migration_model() == "two-phase";
    let verdict = match &r.violation {
        Some(v) if two_phase && v.known_gap.is_some() => {
            totals.known_gaps += 1;
            totals.gap_seeds.push(r.options.seed);
            format!(
                "KNOWN-GAP {} ({})",
                v.checker,
                v.known_gap.unwrap_or_default()
            )
        }
        Some(v) => {
            totals.violations += 1;
            totals.failed_seeds.push(r.options.seed);
            format!("VIOLATION {}", v.checker)
        }
        None if r.stall.is_some() => {
            totals.stalled_seeds.push(r.options.seed);
            if r.stats.faithful_stalls == r.stats.stalls {
                totals.faithful_stalls += 1;
            }
            if !verbose {
                say!(
                    "seed {}: {}",
                    r.options.seed,
                    r.stall.as_deref().unwrap_or_default()
                );
            }
            "ok STALL".into()
        }
        None => "ok".into(),
    };
    say!(
        "seed {}: {verdict} events={} transitions={} actions={} faults={} restarts={} migrations={} virtual={}s",
        r.options.seed,
        r.stats.events,
        r.stats.transitions,
        r.stats.actions,
        r.stats.faults,
        r.stats.restarts,
        r.stats.migrations_ok,
        r.virtual_ms / 1000
    );
}

/// Runs seeds on `jobs` threads, in order of seed for the output.
fn run_many(
    seeds: Vec<u64>,
    planner: PlannerKind,
    profile: Profile,
    jobs: usize,
    extras: &Extras,
) -> Vec<Report> {
    if jobs <= 1 {
        return seeds
            .into_iter()
            .map(|s| run_seed_with(s, planner, profile, extras))
            .collect();
    }
    let chunks: Vec<Vec<u64>> = (0..jobs)
        .map(|j| seeds.iter().copied().skip(j).step_by(jobs).collect())
        .collect();
    let mut out: Vec<Report> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|c| {
                scope.spawn(move || {
                    c.into_iter()
                        .map(|s| run_seed_with(s, planner, profile, extras))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    out.sort_by_key(|r| r.options.seed);
    out
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if args.dump_dir.is_some() && !matches!(args.what, What::Seeds(a, b) if a == b) {
        eprintln!("--dump-cib needs a single --seed");
        return ExitCode::from(2);
    }
    let extras = Extras {
        dump_dir: None,
        crm_simulate: args.crm_simulate,
        diff_crm_simulate: args.diff.clone(),
    };
    let mut totals = Totals::default();
    let started = Instant::now();
    match args.what {
        What::Scenario2013 => {
            let r = run_scenario_2013(args.planner, args.profile);
            show(&r, args.verbose, &mut totals);
        }
        What::Seeds(a, b) if a == b && args.dump_dir.is_some() => {
            let dir = args.dump_dir.clone().unwrap_or_default();
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("--dump-cib {}: {e}", dir.display());
                return ExitCode::from(2);
            }
            let extras = Extras {
                dump_dir: Some(dir),
                crm_simulate: args.crm_simulate,
                diff_crm_simulate: args.diff.clone(),
            };
            let r = run_seed_with(a, args.planner, args.profile, &extras);
            show(&r, args.verbose, &mut totals);
        }
        What::Seeds(a, b) => {
            const BATCH: u64 = 64;
            let mut s = a;
            while s <= b {
                let end = b.min(s.saturating_add(BATCH - 1));
                for r in run_many(
                    (s..=end).collect(),
                    args.planner,
                    args.profile,
                    args.jobs,
                    &extras,
                ) {
                    show(&r, args.verbose, &mut totals);
                }
                if end == u64::MAX {
                    break;
                }
                s = end + 1;
            }
        }
        What::Soak(minutes) => {
            let budget = Duration::from_secs(minutes * 60);
            let start_seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().wrapping_mul(1_000_003))
                .unwrap_or(1);
            say!("soak: {minutes} minute(s) from seed {start_seed}");
            let mut s = start_seed;
            while started.elapsed() < budget {
                let batch: Vec<u64> = (0..args.jobs as u64 * 4)
                    .map(|i| s.wrapping_add(i))
                    .collect();
                s = s.wrapping_add(batch.len() as u64);
                for r in run_many(batch, args.planner, args.profile, args.jobs, &extras) {
                    show(&r, args.verbose, &mut totals);
                }
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if !totals.failed_seeds.is_empty() {
        let list: Vec<String> = totals.failed_seeds.iter().map(u64::to_string).collect();
        say!("failed seeds: {}", list.join(" "));
    }
    if !totals.gap_seeds.is_empty() {
        let list: Vec<String> = totals.gap_seeds.iter().map(u64::to_string).collect();
        say!("known-gap seeds (two-phase model): {}", list.join(" "));
    }
    if !totals.stalled_seeds.is_empty() {
        let list: Vec<String> = totals.stalled_seeds.iter().map(u64::to_string).collect();
        say!(
            "stalled seeds (work left for the recheck timer): {}",
            list.join(" ")
        );
    }
    if args.diff.is_some() {
        let d = &totals.diff;
        if !totals.diff_seeds.is_empty() {
            let list: Vec<String> = totals.diff_seeds.iter().map(u64::to_string).collect();
            say!(
                "seeds where pengine and crm_simulate differ: {}",
                list.join(" ")
            );
        }
        say!(
            "diff-crm-simulate: compared={} identical={} differing={} (actions differ: {}) errors={}",
            d.compared,
            d.identical,
            d.differing,
            d.actions_differ,
            d.errors
        );
    }
    say!(
        "seeds={} events={} violations={} known-gaps={} stalls={} faithful-stalls={} wall={secs:.1}s events/s={:.0}",
        totals.seeds,
        totals.events,
        totals.violations,
        totals.known_gaps,
        totals.stalled_seeds.len(),
        totals.faithful_stalls,
        totals.events as f64 / secs.max(1e-9)
    );
    if totals.violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
