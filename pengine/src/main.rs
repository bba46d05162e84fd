//! The `pengine` command line: plan a Pacemaker transition from a CIB (see `pengine --help`).

fn main() -> std::process::ExitCode {
    eprintln!(
        "pengine {}: the planner is not built yet (issue 5)",
        env!("CARGO_PKG_VERSION")
    );
    std::process::ExitCode::from(2)
}
