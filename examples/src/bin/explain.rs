//! Explains with pengine's library why one resource goes where it goes: per node every score
//! change and filter. `explain CIB.xml RESOURCE`
//!
//! `cargo run -p highlander-examples --bin explain -- examples/cibs/sample-cluster.xml vm-web`

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Explain where a resource goes and why")]
struct Args {
    /// The CIB XML file.
    cib: std::path::PathBuf,
    /// The resource (a primitive, group, clone or bundle).
    resource: String,
}

fn run(args: Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.cib)
        .map_err(|e| format!("cannot read {}: {e}", args.cib.display()))?;
    let cib = pengine::Cib::parse(&text).map_err(|e| format!("{}: {e}", args.cib.display()))?;
    // Plan at the CIB's execution date, else now (the library takes the time as an input).
    let now = cib.execution_date.unwrap_or_else(wall_clock);
    let explanation = cib
        .explain(now, &args.resource)
        .map_err(|e| e.to_string())?;
    print!("{}", explanation.render());
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
            eprintln!("explain: {e}");
            ExitCode::FAILURE
        }
    }
}
