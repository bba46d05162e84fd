//! The conformance run: pengine (or any `crm_simulate`-like candidate) on every case of
//! Pacemaker 2.1.5's scheduler corpus, a table per feature family, and the committed list of
//! passing cases enforced.
//!
//! A test without libtest (`harness = false`), so that it is also the command that prints the
//! table and takes options:
//!
//! ```text
//! cargo test --release -p pengine --test conformance [-- OPTIONS] [NAME...]
//!   --candidate CMD   run CMD instead of the freshly built `pengine simulate`
//!                     (e.g. `--candidate crm_simulate`: the oracle, a self-check)
//!   --require-all     fail unless every selected case passes every check
//!   --update          rewrite pengine/tests/conformance-passing.txt (or UPDATE_CONFORMANCE=1)
//!   --family F        only cases of family F (repeatable)
//!   --jobs N          worker threads (default: the number of CPUs)
//!   --timeout S       seconds per candidate run (default 30)
//!   --failures        print each failing case with its first difference
//!   --show-families   print each selected case's families and whether it is in issue 5's
//!                     target (primitives and groups only), and run nothing
//!   NAME...           only cases whose name contains one of these
//! ```
//!
//! With the default candidate the run fails when a check listed in
//! `conformance-passing.txt` stops passing; newly passing checks are only reported.

#[allow(dead_code)]
#[path = "conformance/mod.rs"]
mod conformance;

use conformance::corpus::{self, Case};
use conformance::families::{self, Family};
use conformance::passing;
use conformance::report;
use conformance::run::{self, Candidate, RunOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::time::{Duration, Instant};

struct Args {
    candidate: Option<String>,
    require_all: bool,
    update: bool,
    families: Vec<Family>,
    options: RunOptions,
    failures: bool,
    show_families: bool,
    filters: Vec<String>,
    list_tests: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        candidate: None,
        require_all: false,
        update: std::env::var_os("UPDATE_CONFORMANCE").is_some_and(|v| v != "0" && !v.is_empty()),
        families: Vec::new(),
        options: RunOptions::default(),
        failures: false,
        show_families: false,
        filters: Vec::new(),
        list_tests: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--candidate" => args.candidate = Some(value("--candidate")?),
            "--require-all" => args.require_all = true,
            "--update" => args.update = true,
            "--failures" => args.failures = true,
            "--show-families" => args.show_families = true,
            "--family" => {
                let name = value("--family")?;
                let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
                args.families.push(Family::from_name(&name).ok_or(format!(
                    "unknown family {name:?}; one of: {}",
                    names.join(", ")
                ))?);
            }
            "--jobs" => {
                args.options.jobs = value("--jobs")?
                    .parse()
                    .map_err(|e| format!("--jobs: {e}"))?;
            }
            "--timeout" => {
                let secs: f64 = value("--timeout")?
                    .parse()
                    .map_err(|e| format!("--timeout: {e}"))?;
                args.options.timeout = Duration::from_secs_f64(secs);
            }
            // What cargo and IDEs pass to every test binary.
            "--list" => args.list_tests = true,
            "--nocapture" | "--show-output" | "--quiet" | "-q" | "--exact"
            | "--include-ignored" | "--ignored" => {}
            "--test-threads" | "--color" | "--format" | "--skip" | "-Z" => {
                value(&arg)?;
            }
            flag if flag.starts_with("--test-threads=")
                || flag.starts_with("--color=")
                || flag.starts_with("--format=") => {}
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            name => args.filters.push(name.to_string()),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("conformance: {e} (options are listed in pengine/tests/conformance.rs)");
            return ExitCode::from(2);
        }
    };
    if args.list_tests {
        println!("conformance: test");
        return ExitCode::SUCCESS;
    }
    let corpus_dir = corpus::corpus_dir();
    match run(&args, &corpus_dir) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the selected cases and reports; `Ok(false)` when the run must fail.
fn run(args: &Args, corpus_dir: &std::path::Path) -> Result<bool, String> {
    let all_cases = corpus::read_cases(corpus_dir)?;
    let mut families: BTreeMap<String, BTreeSet<Family>> = BTreeMap::new();
    for case in &all_cases {
        let xml_path = corpus::CaseFiles::new(corpus_dir, &case.name).xml;
        let xml = std::fs::read_to_string(&xml_path)
            .map_err(|e| format!("{}: {e}", xml_path.display()))?;
        let set = families::classify(&xml).map_err(|e| format!("{}: {e}", case.name))?;
        families.insert(case.name.clone(), set);
    }
    let selected: Vec<Case> = all_cases
        .iter()
        .filter(|c| args.filters.is_empty() || args.filters.iter().any(|f| c.name.contains(f)))
        .filter(|c| {
            args.families.is_empty()
                || args
                    .families
                    .iter()
                    .any(|f| families.get(&c.name).is_some_and(|s| s.contains(f)))
        })
        .cloned()
        .collect();
    if args.show_families {
        for case in &selected {
            let set = families.get(&case.name).cloned().unwrap_or_default();
            let names: Vec<&str> = set.iter().map(|f| f.name()).collect();
            let target = if families::in_target(&set) {
                "target"
            } else {
                "-"
            };
            println!("{}\t{target}\t{}", case.name, names.join(" "));
        }
        return Ok(true);
    }
    let default_candidate = args.candidate.is_none();
    let command = args
        .candidate
        .clone()
        .unwrap_or_else(|| format!("{} simulate", env!("CARGO_BIN_EXE_pengine")));
    let candidate = Candidate::parse(&command).ok_or("--candidate is empty")?;
    eprintln!(
        "conformance: {} of {} cases, candidate `{}`, {} jobs, {} s timeout per run",
        selected.len(),
        all_cases.len(),
        candidate.describe(),
        args.options.jobs,
        args.options.timeout.as_secs_f64()
    );
    let started = Instant::now();
    let results = run::run_all(corpus_dir, &selected, &candidate, &args.options);
    let label = if default_candidate {
        "pengine simulate".to_string()
    } else {
        candidate.describe()
    };
    println!(
        "{}",
        report::render(&label, &results, &families, all_cases.len())
    );
    println!("({:.1} s)", started.elapsed().as_secs_f64());
    if args.failures {
        println!("\nFailures (first difference of each failing case):");
        for result in &results {
            if let Some((check, reason)) = result.first_failure() {
                println!("  {} [{}]: {reason}", result.name, check.name());
            }
        }
    }
    let mut ok = true;
    if args.require_all {
        let failing = results.iter().filter(|r| !r.passes_all()).count();
        if failing > 0 {
            println!("FAILED: --require-all, and {failing} cases fail (--failures lists them)");
            ok = false;
        }
    }
    if !default_candidate {
        if args.update {
            return Err("--update records pengine's results only; drop --candidate".into());
        }
        return Ok(ok);
    }
    let list_path = passing::list_path();
    let list_text = match std::fs::read_to_string(&list_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", list_path.display())),
    };
    let list = passing::parse(&list_text).map_err(|e| format!("{}: {e}", list_path.display()))?;
    let names: BTreeSet<String> = all_cases.iter().map(|c| c.name.clone()).collect();
    let verdict = passing::judge(&list, &results, &names);
    for (name, check) in &verdict.newly_passing {
        println!("newly passing: {name} {}", check.name());
    }
    if args.update {
        let next = passing::updated(&list, &results);
        std::fs::write(&list_path, passing::render(&next))
            .map_err(|e| format!("{}: {e}", list_path.display()))?;
        println!(
            "updated {}: {} cases listed",
            list_path.display(),
            next.cases.len()
        );
        return Ok(ok);
    }
    if !verdict.newly_passing.is_empty() {
        println!(
            "{} checks pass that {} does not list: record them with \
             UPDATE_CONFORMANCE=1 cargo test --release -p pengine --test conformance",
            verdict.newly_passing.len(),
            list_path.display()
        );
    }
    for name in &verdict.unknown {
        println!(
            "FAILED: {name} is listed in {} but not in the corpus",
            list_path.display()
        );
    }
    for (name, check, reason) in &verdict.regressions {
        println!(
            "FAILED: regression: {name} no longer passes {}: {reason}",
            check.name()
        );
    }
    if verdict.is_ok() {
        let judged = results
            .iter()
            .filter(|r| list.cases.contains_key(&r.name))
            .count();
        println!(
            "passing list: the {judged} listed cases that ran (of {}) still pass what they passed",
            list.cases.len()
        );
    }
    Ok(ok && verdict.is_ok())
}
