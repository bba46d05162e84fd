//! A what-if with pengine's library: a node fails, an operation fails, and the CIB after the
//! transition ran: `what_if CIB.xml [--node-fail NODE]... [--op-fail SPEC]... [--save FILE]`.
//! SPEC is crm_simulate's `RSC_TASK_INTERVAL@NODE=RC` (e.g. `vm-db_start_0@node3=1`).
//!
//! `cargo run -p highlander-examples --bin what_if -- examples/cibs/sample-cluster.xml
//! --node-fail node2 --op-fail vm-db_start_0@node3=1 --save /tmp/after.xml`

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Simulate a node failure or an operation failure on a CIB")]
struct Args {
    /// The CIB XML file.
    cib: std::path::PathBuf,
    /// A node that fails before planning (repeatable).
    #[arg(long)]
    node_fail: Vec<String>,
    /// An action that fails when the transition runs: RSC_TASK_INTERVAL@NODE=RC (repeatable).
    #[arg(long)]
    op_fail: Vec<String>,
    /// Write the CIB after the transition here.
    #[arg(long)]
    save: Option<std::path::PathBuf>,
}

fn run(args: Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.cib)
        .map_err(|e| format!("cannot read {}: {e}", args.cib.display()))?;
    let document = pengine::CibDocument::parse(&text).map_err(|e| e.to_string())?;
    let cib = document.cib().map_err(|e| e.to_string())?;
    // Plan at the CIB's execution date, else now (the library takes the time as an input).
    let now = cib.execution_date.unwrap_or_else(wall_clock);
    let mut what_if = cib.what_if(now);
    for node in &args.node_fail {
        what_if = what_if.node_fail(node).map_err(|e| e.to_string())?;
    }
    for spec in &args.op_fail {
        what_if = what_if.op_fail(spec).map_err(|e| e.to_string())?;
    }
    let simulation = what_if.run();
    print!("{}", simulation.text());
    for e in simulation.errors() {
        eprintln!("{e}");
    }
    if let Some(path) = &args.save {
        std::fs::write(path, document.render_with_status(simulation.cib()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn wall_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("what_if: {e}");
            ExitCode::FAILURE
        }
    }
}
