//! The `pengine` command line: plan a Pacemaker transition from a CIB (see `pengine --help`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli_generate;
mod cli_node;
use pengine::simulate::{self, Injection, InjectionError, TicketChange};

#[derive(Parser)]
#[command(
    name = "pengine",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("HIGHLANDER_COMMIT"), ")"),
    about = "Plan a Pacemaker transition from a CIB, as crm_simulate does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Simulate a transition (crm_simulate's flags).
    Simulate(SimulateArgs),
    /// Explain why a resource goes where it goes: per node, every score change and filter.
    Explain(ExplainArgs),
    /// Node lifecycle requests for a live cluster (evacuate, restore, shutdown, sync): see
    /// docs/recovery.md.
    Node(cli_node::NodeArgs),
    /// Write the man pages or shell completions (for packaging).
    #[command(hide = true)]
    Generate(cli_generate::GenerateArgs),
}

#[derive(clap::Args)]
struct ExplainArgs {
    /// The resource to explain: a primitive (a clone instance such as `rsc:0`, a group member,
    /// a bundle's container, IP, connection or inner instance), or a group, clone or bundle
    /// (each of its resources in turn).
    resource: String,
    /// CIB XML file to read.
    #[arg(short = 'x', long = "xml-file")]
    xml_file: std::path::PathBuf,
    /// Evaluate as of this date (ISO 8601).
    #[arg(short = 't', long = "set-datetime")]
    set_datetime: Option<String>,
}

fn explain(args: ExplainArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.xml_file)
        .map_err(|e| format!("cannot read {}: {e}", args.xml_file.display()))?;
    let cib = pengine::parse_cib(&text).map_err(|e| format!("{}: {e}", args.xml_file.display()))?;
    let now = match (&args.set_datetime, cib.execution_date) {
        (Some(t), _) => {
            pengine::placement::parse_iso_date(t).ok_or_else(|| format!("invalid date '{t}'"))?
        }
        (None, Some(e)) => e,
        (None, None) => wall_clock(),
    };
    let explained =
        pengine::explain::explain_all(&cib, now, &args.resource).map_err(|e| e.to_string())?;
    print!("{}", pengine::explain::render_all(&explained));
    Ok(())
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
    /// Set whether the cluster has quorum ('1'/'true' or '0'/'false'), as crm_simulate's -q.
    #[arg(short = 'q', long = "quorum", value_name = "QUORUM")]
    quorum: Option<String>,
    /// Simulate bringing a node online (repeatable).
    #[arg(short = 'u', long = "node-up", value_name = "NODE")]
    node_up: Vec<String>,
    /// Simulate taking a node offline cleanly (repeatable).
    #[arg(short = 'd', long = "node-down", value_name = "NODE")]
    node_down: Vec<String>,
    /// Simulate a node failing (repeatable).
    #[arg(short = 'f', long = "node-fail", value_name = "NODE")]
    node_fail: Vec<String>,
    /// Simulate granting a ticket (repeatable).
    #[arg(short = 'g', long = "ticket-grant", value_name = "TICKET")]
    ticket_grant: Vec<String>,
    /// Simulate revoking a ticket (repeatable).
    #[arg(short = 'r', long = "ticket-revoke", value_name = "TICKET")]
    ticket_revoke: Vec<String>,
    /// Simulate making a ticket standby (repeatable).
    #[arg(short = 'b', long = "ticket-standby", value_name = "TICKET")]
    ticket_standby: Vec<String>,
    /// Simulate activating a ticket (out of standby; repeatable).
    #[arg(short = 'e', long = "ticket-activate", value_name = "TICKET")]
    ticket_activate: Vec<String>,
    /// Inject an operation result before scheduling: RSC_TASK_INTERVAL@NODE=RC
    /// (e.g. vm1_monitor_10000@node1=7; repeatable).
    #[arg(short = 'i', long = "op-inject", value_name = "OPSPEC")]
    op_inject: Vec<String>,
    /// Make this action fail with RC when the transition runs: RSC_TASK_INTERVAL@NODE=RC
    /// (e.g. vm1_migrate_to_0@node1=1; repeatable).
    #[arg(short = 'F', long = "op-fail", value_name = "OPSPEC")]
    op_fail: Vec<String>,
    /// Write the resulting CIB (after the injections and, with -S, the transition) here.
    #[arg(short = 'O', long = "save-output", value_name = "FILE")]
    save_output: Option<std::path::PathBuf>,
    /// Write the transition graph XML here.
    #[arg(short = 'G', long = "save-graph")]
    save_graph: Option<std::path::PathBuf>,
    /// Write the transition graph as DOT here.
    #[arg(short = 'D', long = "save-dotfile")]
    save_dotfile: Option<std::path::PathBuf>,
    /// Evaluate as of this date (ISO 8601).
    #[arg(short = 't', long = "set-datetime")]
    set_datetime: Option<String>,
    /// Output format of the -S report: crm_simulate's text, or one JSON document.
    #[arg(long = "output-as", value_enum, default_value_t = OutputAs::Text)]
    output_as: OutputAs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutputAs {
    Text,
    Json,
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

/// The injections named on the command line, in crm_simulate's order of application.
fn injections(args: &SimulateArgs) -> Result<Vec<Injection>, InjectionError> {
    let mut out = Vec::new();
    if let Some(q) = &args.quorum {
        out.push(simulate::parse_quorum(q)?);
    }
    for n in &args.node_up {
        out.push(Injection::NodeUp(simulate::parse_node(n)?));
    }
    for n in &args.node_down {
        out.push(Injection::NodeDown(simulate::parse_node(n)?));
    }
    for n in &args.node_fail {
        out.push(Injection::NodeFail(simulate::parse_node(n)?));
    }
    for (change, tickets) in [
        (TicketChange::Grant, &args.ticket_grant),
        (TicketChange::Revoke, &args.ticket_revoke),
        (TicketChange::Standby, &args.ticket_standby),
        (TicketChange::Activate, &args.ticket_activate),
    ] {
        for t in tickets {
            out.push(Injection::Ticket {
                change,
                ticket: simulate::parse_ticket(t)?,
            });
        }
    }
    for spec in &args.op_inject {
        out.push(Injection::Op(simulate::parse_op_spec(spec)?));
    }
    Ok(out)
}

fn wall_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Reads a CIB file, plain or bzip2-compressed (the scheduler's saved `pe-input-N.bz2`,
/// decompressed by the system's `bzip2`).
fn read_input(path: &std::path::Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !bytes.starts_with(b"BZh") {
        return String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()));
    }
    let out = std::process::Command::new("bzip2")
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run bzip2 for {}: {e}", path.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{}: bzip2 -dc failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{}: not UTF-8", path.display()))
}

fn run(args: SimulateArgs) -> Result<(), String> {
    let text = read_input(&args.xml_file)?;
    let input_xml =
        pengine::cib::parse_xml(&text).map_err(|e| format!("{}: {e}", args.xml_file.display()))?;
    let cib = pengine::cib::cib_from_element(&input_xml)
        .map_err(|e| format!("{}: {e}", args.xml_file.display()))?;
    // The element tree is only needed to write `-O`: free it now otherwise (peak memory).
    let input_xml = args.save_output.is_some().then_some(input_xml);
    let injections = injections(&args).map_err(|e| e.to_string())?;
    let op_fail = args
        .op_fail
        .iter()
        .map(|s| simulate::parse_op_spec(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if cib.schema_validation_disabled() {
        eprintln!("{}", pengine::cib::SCHEMA_VALIDATION_DISABLED);
    }
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
        (None, None) => (wall_clock(), None),
    };
    let when = wall_clock();
    let input = pengine::SimulationInput {
        show_date: show.as_deref(),
        injections: &injections,
        op_fail: &op_fail,
        inject_time: Some(when),
        summary: args.output_as == OutputAs::Json,
    };
    if args.output_as == OutputAs::Json && !args.simulate {
        return Err("--output-as json describes a -S run: add -S".into());
    }
    let mut result: Option<pengine::Cib> = None;
    if args.simulate {
        let sim = pengine::run_simulation(&cib, now, &input);
        if !args.quiet && !args.show_scores {
            match &sim.summary {
                Some(summary) => println!(
                    "{}",
                    serde_json::to_string_pretty(&summary.to_json()).map_err(|e| e.to_string())?
                ),
                None => print!("{}", sim.text),
            }
        }
        for e in &sim.errors {
            eprintln!("{e}");
        }
        result = Some(sim.result);
    }
    let planned = if injections.is_empty() {
        std::borrow::Cow::Borrowed(&cib)
    } else {
        std::borrow::Cow::Owned(simulate::inject(&cib, &injections, when, now).cib)
    };
    if let (Some(path), Some(input_xml)) = (&args.save_output, &input_xml) {
        let out = result.as_ref().unwrap_or(planned.as_ref());
        std::fs::write(path, simulate::render_cib_xml(input_xml, out))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if args.show_scores || args.save_graph.is_some() || args.save_dotfile.is_some() {
        let t = pengine::schedule(&planned, now);
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
        Command::Simulate(args) => report("pengine", run(args)),
        Command::Explain(args) => report("pengine", explain(args)),
        Command::Node(args) => report("pengine node", cli_node::run(args)),
        Command::Generate(args) => report("pengine generate", cli_generate::run::<Cli>(args)),
    }
}

/// Maps a subcommand's result to the exit code, with its error on stderr.
fn report<E: std::fmt::Display>(who: &str, result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{who}: {e}");
            ExitCode::from(1)
        }
    }
}
