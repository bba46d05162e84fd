//! The `pengine` command line: plan a Pacemaker transition from a CIB (see `pengine --help`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli_generate;
mod cli_node;
mod cli_refused;
mod cli_source;
use cli_source::Source;
use pengine::{InjectionError, TicketChange, WhatIf};

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
    let cib =
        pengine::Cib::parse(&text).map_err(|e| format!("{}: {e}", args.xml_file.display()))?;
    let now = match (&args.set_datetime, cib.execution_date) {
        (Some(t), _) => pengine::parse_iso_date(t).ok_or_else(|| format!("invalid date '{t}'"))?,
        (None, Some(e)) => e,
        (None, None) => wall_clock(),
    };
    let explained = cib
        .explain(now, &args.resource)
        .map_err(|e| e.to_string())?;
    print!("{}", explained.render());
    Ok(())
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// CIB XML file to read (without -x, -L or -P the CIB is read from stdin, as with -p).
    #[arg(short = 'x', long = "xml-file", conflicts_with_all = ["xml_pipe", "live_check"])]
    xml_file: Option<std::path::PathBuf>,
    /// Read the CIB from stdin.
    #[arg(short = 'p', long = "xml-pipe", conflicts_with = "live_check")]
    xml_pipe: bool,
    /// Read the live CIB (`cibadmin -Q`, which honours `CIB_file` and `CIB_shadow`).
    #[arg(short = 'L', long = "live-check")]
    live_check: bool,
    /// Plan and show the transition summary, without simulating it.
    #[arg(short = 'R', long = "run")]
    run: bool,
    /// Simulate the transition's execution and show the resulting state.
    #[arg(short = 'S', long = "simulate")]
    simulate: bool,
    /// Like -S, and store the resulting CIB back into the -x file.
    #[arg(short = 'X', long = "in-place", conflicts_with = "save_output")]
    in_place: bool,
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
    /// Write the input CIB, after the injections and before planning, here.
    #[arg(short = 'I', long = "save-input", value_name = "FILE")]
    save_input: Option<std::path::PathBuf>,
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
    /// Plan every XML file of this directory and print the time each took (other flags but
    /// -N and -t are ignored, as by crm_simulate).
    #[arg(short = 'P', long = "profile", value_name = "DIR")]
    profile: Option<std::path::PathBuf>,
    /// With -P, plan each file N times.
    #[arg(short = 'N', long = "repeat", value_name = "N", default_value_t = 1)]
    repeat: u32,
    /// Show pending operations (always on; crm_simulate's deprecated -j).
    #[arg(short = 'j', long = "pending", hide = true)]
    pending: bool,
    #[command(flatten)]
    refused: cli_refused::RefusedFlags,
    /// Output format of the -S report: crm_simulate's text, or one JSON document.
    #[arg(long = "output-as", value_enum, default_value_t = OutputAs::Text)]
    output_as: OutputAs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutputAs {
    Text,
    Json,
}

/// The what-if of the command line: the injections in crm_simulate's order of application, the
/// `-F` failures and the time results are recorded at.
fn what_if<'a>(
    args: &SimulateArgs,
    cib: &'a pengine::Cib,
    now: i64,
) -> Result<WhatIf<'a>, InjectionError> {
    let mut w = cib.what_if(now).results_at(wall_clock());
    if let Some(q) = &args.quorum {
        w = w.quorum(q)?;
    }
    for n in &args.node_up {
        w = w.node_up(n)?;
    }
    for n in &args.node_down {
        w = w.node_down(n)?;
    }
    for n in &args.node_fail {
        w = w.node_fail(n)?;
    }
    for (change, tickets) in [
        (TicketChange::Grant, &args.ticket_grant),
        (TicketChange::Revoke, &args.ticket_revoke),
        (TicketChange::Standby, &args.ticket_standby),
        (TicketChange::Activate, &args.ticket_activate),
    ] {
        for t in tickets {
            w = w.ticket(change, t)?;
        }
    }
    for spec in &args.op_inject {
        w = w.op_inject(spec)?;
    }
    for spec in &args.op_fail {
        w = w.op_fail(spec)?;
    }
    if args.output_as == OutputAs::Json {
        w = w.with_json();
    }
    Ok(w)
}

fn wall_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// How far the report goes: `-S`/`-X` run the transition; `-R`, and whatever plans (`-s`, `-G`,
/// `-D`), stop after its summary; otherwise the status and modifications only (crm_simulate's
/// `pcmk_sim_process` and `pcmk_sim_simulate`).
fn run_to(args: &SimulateArgs) -> pengine::RunTo {
    if args.simulate || args.in_place {
        pengine::RunTo::Revised
    } else if args.run
        || args.show_scores
        || args.save_graph.is_some()
        || args.save_dotfile.is_some()
    {
        pengine::RunTo::Summary
    } else {
        pengine::RunTo::Status
    }
}

/// Flag combinations refused before anything is read.
fn check_flags(args: &SimulateArgs, source: &Source) -> Result<(), String> {
    args.refused.check()?;
    if args.in_place && !matches!(source, Source::File(_)) {
        return Err("-X/--in-place stores the result back into the -x FILE: give -x".into());
    }
    if args.output_as == OutputAs::Json && !(args.simulate || args.in_place) {
        return Err("--output-as json describes a -S run: add -S".into());
    }
    Ok(())
}

fn simulate(args: SimulateArgs) -> Result<(), String> {
    if let Some(dir) = &args.profile {
        let date = match &args.set_datetime {
            Some(t) => {
                Some(pengine::parse_iso_date(t).ok_or_else(|| format!("invalid date '{t}'"))?)
            }
            None => None,
        };
        args.refused.check()?;
        if args.show_scores {
            return Err(
                "-P with -s is refused: crm_simulate then prints every file's scores in \
                        its plain text layout, which is not implemented"
                    .into(),
            );
        }
        return cli_source::profile(dir, args.repeat, date, wall_clock());
    }
    let source = Source::from_flags(args.xml_file.as_deref(), args.live_check);
    check_flags(&args, &source)?;
    let label = source.label();
    let text = source.read()?;
    let document = pengine::CibDocument::parse(&text).map_err(|e| format!("{label}: {e}"))?;
    let mut cib = document.cib().map_err(|e| format!("{label}: {e}"))?;
    cib.live = matches!(source, Source::Live);
    // The document is only needed to write a CIB: free it now otherwise (peak memory).
    let writes = args.save_output.is_some() || args.save_input.is_some() || args.in_place;
    let document = writes.then_some(document);
    // Bad injection arguments are reported before anything about the CIB.
    what_if(&args, &cib, 0).map_err(|e| e.to_string())?;
    report_diagnostics(&cib, &label);
    let (now, show) = match (&args.set_datetime, cib.execution_date) {
        (Some(t), _) => (
            pengine::parse_iso_date(t).ok_or_else(|| format!("invalid date '{t}'"))?,
            None,
        ),
        (None, Some(e)) => (e, Some(pengine::format_date(e))),
        (None, None) => (wall_clock(), None),
    };
    let mut what_if = what_if(&args, &cib, now)
        .map_err(|e| e.to_string())?
        .run_to(run_to(&args));
    if let Some(date) = &show {
        what_if = what_if.show_date(date);
    }
    let sim = what_if.run();
    if !args.quiet && !args.show_scores {
        match sim.to_json() {
            Some(json) => println!("{json}"),
            None => print!("{}", sim.text()),
        }
    }
    for e in sim.errors() {
        eprintln!("{e}");
    }
    if let Some(document) = &document {
        write_cibs(&args, document, &what_if, sim.cib())?;
    }
    write_plan(&args, &what_if, now)
}

/// What the CLI says about the CIB before the report: schema validation off, ignored input.
fn report_diagnostics(cib: &pengine::Cib, label: &str) {
    if cib.schema_validation_disabled() {
        eprintln!("{}", pengine::SCHEMA_VALIDATION_DISABLED);
    }
    for d in &cib.diagnostics {
        eprintln!(
            "pengine: {label}: <{} id=\"{}\"> line {}: {}",
            d.element, d.id, d.line, d.message
        );
    }
}

/// `-I` (the injected input), `-O` and `-X` (the result: injected and, with -S, run).
fn write_cibs(
    args: &SimulateArgs,
    document: &pengine::CibDocument,
    what_if: &WhatIf,
    result: &pengine::Cib,
) -> Result<(), String> {
    let write = |path: &std::path::Path, cib: &pengine::Cib| {
        std::fs::write(path, document.render_with_status(cib))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let Some(path) = &args.save_input {
        write(path, what_if.injected().as_ref())?;
    }
    let stored = if args.in_place {
        args.xml_file.as_ref()
    } else {
        args.save_output.as_ref()
    };
    match stored {
        Some(path) => write(path, result),
        None => Ok(()),
    }
}

/// `-s`, `-G` and `-D`: the plan of the injected CIB.
fn write_plan(args: &SimulateArgs, what_if: &WhatIf, now: i64) -> Result<(), String> {
    if !(args.show_scores || args.save_graph.is_some() || args.save_dotfile.is_some()) {
        return Ok(());
    }
    let plan = what_if.injected().plan(now);
    if args.show_scores {
        print!("{}", plan.scores());
    }
    if let Some(path) = &args.save_graph {
        std::fs::write(path, plan.graph_xml())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.save_dotfile {
        std::fs::write(path, plan.dot())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => report("pengine", simulate(args)),
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
