//! cts-sim: runs the deterministic cluster simulator for one seed, a range of seeds, the 2013
//! scenario, or a timed soak; exits 0 only when no checker fired. The last line counts seeds,
//! events and violations.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{ArgGroup, Parser};

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

/// How the flags combine (shown after the flag list by `--help`).
const AFTER_HELP: &str = "\
  atomic (default): the VMs as a Highlander cluster runs them (ocf:highlander:VirtualDomain, atomic migration model); every violation fails the run.\n\
  full, no-migrate: pengine's two-phase model (Pacemaker's); violations labelled with a known gap are counted apart (known-gaps=N) and do not fail the run.\n\
  --dump-cib DIR (with --seed): writes every CIB the DC plans from as DIR/seed<N>-T<id>.xml (and -T<id>-idle.xml after a transition ended without an abort), for crm_simulate -x FILE -S.\n\
  --crm-simulate (two-phase profiles): a stall not explained otherwise is checked with crm_simulate (Pacemaker 2.1.5, installed) on the same CIB; when Pacemaker's scheduler has work there too the stall is counted faithful (faithful-stalls=N).\n\
  --diff-crm-simulate (two-phase profiles): on every planner call (every Nth with --diff-every N) the CIB the planner reads goes to `pengine simulate -x CIB -S` (--pengine PATH, default the pengine next to cts-sim) and `crm_simulate -x CIB -S`; their normalised outputs are compared. A seed's first differing CIB is kept in --diff-out DIR (default /tmp/cts-sim-diff) with both outputs (.crm, .pe); the last line tallies the comparisons.";

/// The command line.
#[derive(Parser)]
#[command(
    name = "cts-sim",
    about = "Run the deterministic cluster simulator; exit 0 only when no checker fired",
    after_help = AFTER_HELP
)]
#[command(group(ArgGroup::new("what").required(true).args(["seed", "seeds", "soak", "scenario"])))]
struct Cli {
    /// One seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// A range of seeds, both ends included.
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    seeds: Option<(u64, u64)>,
    /// Random seeds for this many minutes.
    #[arg(long, value_name = "MINUTES")]
    soak: Option<u64>,
    /// A named scenario.
    #[arg(long, value_parser = ["2013"])]
    scenario: Option<String>,
    /// The planner the simulated DC asks.
    #[arg(long, value_parser = parse_planner, default_value = "pengine", value_name = "pengine|pacemaker-1.0")]
    planner: PlannerKind,
    /// The VMs' migration model and fault mix.
    #[arg(long, value_parser = parse_profile, default_value = "atomic", value_name = "atomic|full|no-migrate")]
    profile: Profile,
    /// Seeds run in parallel (1 to 64).
    #[arg(long, default_value_t = 1)]
    jobs: u64,
    /// Print every event.
    #[arg(short, long)]
    verbose: bool,
    /// With --seed: write every CIB the DC plans from into DIR.
    #[arg(long, value_name = "DIR")]
    dump_cib: Option<std::path::PathBuf>,
    /// Check unexplained stalls with crm_simulate (two-phase profiles).
    #[arg(long)]
    crm_simulate: bool,
    /// Compare pengine with crm_simulate on the planner's CIBs (two-phase profiles).
    #[arg(long)]
    diff_crm_simulate: bool,
    /// With --diff-crm-simulate: every Nth planner call.
    #[arg(long, default_value_t = 1, value_name = "N")]
    diff_every: u64,
    /// With --diff-crm-simulate: where a seed's first differing CIB is kept.
    #[arg(long, default_value = "/tmp/cts-sim-diff", value_name = "DIR")]
    diff_out: std::path::PathBuf,
    /// With --diff-crm-simulate: the pengine binary (default: next to cts-sim).
    #[arg(long, value_name = "PATH")]
    pengine: Option<std::path::PathBuf>,
}

fn parse_range(v: &str) -> Result<(u64, u64), String> {
    let (a, b) = v.split_once("..").ok_or("expected A..B")?;
    let a = a.parse::<u64>().map_err(|e| e.to_string())?;
    let b = b.parse::<u64>().map_err(|e| e.to_string())?;
    if b < a {
        return Err("A..B needs A <= B".into());
    }
    Ok((a, b))
}

fn parse_planner(v: &str) -> Result<PlannerKind, String> {
    PlannerKind::parse(v).ok_or(format!("unknown planner {v}"))
}

fn parse_profile(v: &str) -> Result<Profile, String> {
    Profile::parse(v).ok_or(format!("unknown profile {v}"))
}

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
    let cli = Cli::parse();
    let what = match (cli.seed, cli.seeds, cli.soak) {
        (Some(n), _, _) => What::Seeds(n, n),
        (_, Some((a, b)), _) => What::Seeds(a, b),
        (_, _, Some(minutes)) => What::Soak(minutes),
        // (the group requires one of them; `--scenario` takes only 2013)
        _ => What::Scenario2013,
    };
    let (planner, profile, diff) = (cli.planner, cli.profile, cli.diff_crm_simulate);
    let (diff_every, diff_out, pengine) = (cli.diff_every.max(1), cli.diff_out, cli.pengine);
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
        what,
        planner,
        profile,
        jobs: cli.jobs.clamp(1, 64) as usize,
        verbose: cli.verbose,
        dump_dir: cli.dump_cib,
        crm_simulate: cli.crm_simulate,
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
