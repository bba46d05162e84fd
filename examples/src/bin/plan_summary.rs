//! Plans a CIB file with pengine's library and prints the Transition Summary, as an outside tool
//! would: `plan_summary CIB.xml [DATE]` (DATE in ISO 8601; default the CIB's
//! execution date, else now).
//!
//! `cargo run -p highlander-examples --bin plan_summary -- examples/cibs/sample-cluster.xml`

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Plan a CIB and print the Transition Summary")]
struct Args {
    /// The CIB XML file.
    cib: std::path::PathBuf,
    /// Plan as of this date (ISO 8601); default the CIB's execution-date, else now.
    date: Option<String>,
}

fn run(args: Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.cib)
        .map_err(|e| format!("cannot read {}: {e}", args.cib.display()))?;
    let cib = pengine::Cib::parse(&text).map_err(|e| format!("{}: {e}", args.cib.display()))?;
    let now = match (&args.date, cib.execution_date) {
        (Some(d), _) => pengine::parse_iso_date(d).ok_or(format!("invalid date '{d}'"))?,
        (None, Some(e)) => e,
        (None, None) => wall_clock(),
    };
    let plan = cib.plan(now);
    println!("Transition Summary ({}):", pengine::format_date(now));
    print!("{}", plan.summary());
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
            eprintln!("plan_summary: {e}");
            ExitCode::FAILURE
        }
    }
}
