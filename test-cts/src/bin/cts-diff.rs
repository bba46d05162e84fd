//! cts-diff: differential testing of `pengine simulate` against crm_simulate (Pacemaker 2.1.5)
//! on generated CIBs: `gen` writes one seed's CIB, `run` compares a block of seeds and prints
//! the identical rates per check and per feature, `shrink` reduces a differing CIB.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use test_cts::diff::{generator, report, run, shrink};

#[derive(Parser)]
#[command(about = "Differential testing of pengine simulate against crm_simulate")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Writes the CIB of one seed to stdout (with --features, the features it holds instead).
    Gen {
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        features: bool,
    },
    /// Compares the candidate with crm_simulate on a block of seeds.
    Run {
        /// A range `FIRST..LAST` (inclusive) or one seed.
        #[arg(long, default_value = "1..100")]
        seeds: String,
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// The candidate command (before crm_simulate's flags).
        #[arg(long, default_value = "target/release/pengine simulate")]
        candidate: String,
        /// Where differing CIBs are kept (`seed-N.xml` and `seed-N.txt`).
        #[arg(long, default_value = "target/cts-diff")]
        keep: PathBuf,
        /// How many difference classes to print.
        #[arg(long, default_value_t = 15)]
        top: usize,
    },
    /// Reduces a differing CIB to a minimal one on which `check` still differs.
    Shrink {
        cib: PathBuf,
        #[arg(long, default_value = "summary")]
        check: String,
        #[arg(long, default_value = "target/release/pengine simulate")]
        candidate: String,
        /// Where the minimal CIB is written.
        #[arg(long)]
        out: PathBuf,
    },
}

/// Parses `A..B` (inclusive) or `A`.
fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|e| format!("seed {s:?}: {e}"))
    };
    match text.split_once("..") {
        Some((a, b)) => Ok((number(a)?..=number(b)?).collect()),
        None => Ok(vec![number(text)?]),
    }
}

fn tool(command: &str) -> Result<run::Tool, String> {
    run::Tool::parse(command).ok_or_else(|| "the candidate command is empty".to_string())
}

fn main_result(cli: Cli) -> Result<(), String> {
    match cli.command {
        Cmd::Gen { seed, features } => {
            let generated = generator::generate(seed);
            if features {
                for f in generated.features {
                    println!("{f}");
                }
            } else {
                print!("{}", generated.xml);
            }
        }
        Cmd::Run {
            seeds,
            jobs,
            candidate,
            keep,
            top,
        } => {
            let seeds = parse_seeds(&seeds)?;
            let result = report::run_seeds(&tool(&candidate)?, &seeds, jobs, Some(&keep))?;
            print!("{}", result.render(top));
            println!("differing CIBs kept in {}", keep.display());
        }
        Cmd::Shrink {
            cib,
            check,
            candidate,
            out,
        } => {
            let check = run::Check::ALL
                .into_iter()
                .find(|c| c.name() == check)
                .ok_or_else(|| format!("unknown check {check:?} (summary, graph, dot, scores)"))?;
            let xml =
                std::fs::read_to_string(&cib).map_err(|e| format!("{}: {e}", cib.display()))?;
            let scratch = out.with_extension("candidate.xml");
            let (small, tried) = shrink::shrink(&tool(&candidate)?, &xml, check, &scratch)?;
            let _ = std::fs::remove_file(&scratch);
            std::fs::write(&out, &small).map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "{tried} candidates tried; {} bytes to {} bytes: {}",
                xml.len(),
                small.len(),
                out.display()
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match main_result(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cts-diff: {e}");
            ExitCode::FAILURE
        }
    }
}
