//! The `pengine` command line: plan a Pacemaker transition from a CIB (see `pengine --help`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "pengine",
    version,
    about = "Plan a Pacemaker transition from a CIB, as crm_simulate does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a transition (crm_simulate's flags).
    Simulate(SimulateArgs),
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// CIB XML file to read.
    #[arg(short = 'x', long = "xml-file")]
    xml_file: std::path::PathBuf,
    /// Simulate the transition's execution and show the resulting state.
    #[arg(short = 'S', long = "simulate")]
    simulate: bool,
    /// Show allocation scores.
    #[arg(short = 's', long = "show-scores")]
    show_scores: bool,
    /// Quiet: do not show the status.
    #[arg(short = 'Q', long = "quiet")]
    quiet: bool,
    /// Quiet (alias used by some callers).
    #[arg(short = 'q')]
    quiet_lower: bool,
    /// Write the transition graph XML here.
    #[arg(short = 'G', long = "save-graph")]
    save_graph: Option<std::path::PathBuf>,
    /// Write the transition graph as DOT here.
    #[arg(short = 'D', long = "save-dotfile")]
    save_dotfile: Option<std::path::PathBuf>,
    /// Evaluate as of this date (ISO 8601).
    #[arg(short = 't', long = "set-datetime")]
    set_datetime: Option<String>,
}

fn format_date(epoch: i64) -> String {
    let days = epoch.div_euclid(86400);
    let secs = epoch.rem_euclid(86400);
    let (y, m, d) = pengine::placement::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

fn run(args: SimulateArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.xml_file)
        .map_err(|e| format!("cannot read {}: {e}", args.xml_file.display()))?;
    let cib = pengine::parse_cib(&text).map_err(|e| format!("{}: {e}", args.xml_file.display()))?;
    for d in &cib.diagnostics {
        eprintln!(
            "pengine: {}: <{} id=\"{}\"> line {}: {}",
            args.xml_file.display(),
            d.element,
            d.id,
            d.line,
            d.message
        );
    }
    let (now, show) = match (&args.set_datetime, cib.execution_date) {
        (Some(t), _) => (
            pengine::placement::parse_iso_date(t).ok_or_else(|| format!("invalid date '{t}'"))?,
            None,
        ),
        (None, Some(e)) => (e, Some(format_date(e))),
        (None, None) => (
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0),
            None,
        ),
    };
    let quiet = args.quiet || args.quiet_lower;
    if args.simulate && !quiet && !args.show_scores {
        print!("{}", pengine::render_simulation(&cib, now, show.as_deref()));
    }
    if args.show_scores || args.save_graph.is_some() || args.save_dotfile.is_some() {
        let t = pengine::schedule(&cib, now);
        if args.show_scores {
            print!("{}", pengine::graph::render_scores(&t.observed, &t.desired));
        }
        if let Some(path) = &args.save_graph {
            std::fs::write(
                path,
                pengine::graph::render_graph_xml(&t.observed, &t.graph),
            )
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        if let Some(path) = &args.save_dotfile {
            std::fs::write(path, pengine::graph::render_dot(&t.observed, &t.graph))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => match run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pengine: {e}");
                ExitCode::from(1)
            }
        },
    }
}
