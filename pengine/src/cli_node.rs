//! `pengine node`: the writer that makes a real Pacemaker cluster follow the node lifecycle
//! rules (evacuate, restore, shutdown records, failback). The library decides
//! (`Cib::node_request`); this module does the I/O: it reads the live CIB with `cibadmin -Q` and
//! writes each change with `crm_resource`, `crm_attribute` or `cibadmin`. Those tools honour
//! `CIB_file`, so the same command works on a CIB file.

use std::process::Command;
use std::time::{Duration, Instant};

use pengine::{CibChange, NodeRequest};

#[derive(clap::Args)]
pub struct NodeArgs {
    #[command(subcommand)]
    action: NodeAction,
    /// Print the changes without writing them.
    #[arg(long, global = true)]
    dry_run: bool,
    /// After writing, wait for the cluster to settle (`crm_resource --wait`) and sync again,
    /// until nothing is left to write or this many seconds pass (0: do not wait).
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 0)]
    wait: u64,
}

#[derive(clap::Subcommand)]
enum NodeAction {
    /// Move every resource away from NODE (live where allowed), recording where it was.
    Evacuate { node: String },
    /// Withdraw NODE's evacuation: exactly the resources evacuated from it go back.
    Restore { node: String },
    /// Record where NODE's resources run before Pacemaker is stopped on it cleanly (and hold
    /// those with shutdown-policy freeze or stop). Run it just before stopping Pacemaker.
    Shutdown { node: String },
    /// Bring records and constraints up to date: after a node rejoined (failback), after
    /// resources came home (records cleared), after a freeze limit passed.
    Sync,
}

fn wall_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Runs a cluster tool; its output on failure.
fn tool(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` exited with {}: {}{}",
            args.join(" "),
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn read_cib() -> Result<pengine::Cib, String> {
    let xml = tool(&["cibadmin", "-Q"])?;
    pengine::parse_cib(&xml).map_err(|e| format!("cibadmin -Q: {e}"))
}

/// Writes one change with the matching Pacemaker tool.
fn write(change: &CibChange) -> Result<(), String> {
    match change {
        CibChange::Meta {
            rsc,
            name,
            value: Some(v),
        } => tool(&["crm_resource", "-r", rsc, "--meta", "-p", name, "-v", v]),
        CibChange::Meta {
            rsc,
            name,
            value: None,
        } => tool(&["crm_resource", "-r", rsc, "--meta", "-d", name]),
        CibChange::AddPin(p) => tool(&["cibadmin", "-C", "-o", "constraints", "-X", &p.xml()]),
        CibChange::RemovePin { id } => {
            let xml = pengine::Pin {
                id: id.clone(),
                ..Default::default()
            }
            .id_only_xml();
            tool(&["cibadmin", "-D", "-o", "constraints", "-X", &xml])
        }
        CibChange::NodeAttr { node, name, value } => {
            let mut argv = vec!["crm_attribute", "-l", "forever", "-N", node, "-n", name];
            match value {
                Some(v) => argv.extend(["-v", v.as_str()]),
                None => argv.push("-D"),
            }
            tool(&argv)
        }
    }
    .map(|_| ())
}

/// One round: read, decide, write. Returns how many changes were written.
fn round(request: &NodeRequest, dry_run: bool) -> Result<usize, String> {
    let cib = read_cib()?;
    let changes = cib
        .node_request(wall_clock(), request)
        .map_err(|e| e.to_string())?;
    for c in &changes {
        println!("{}{c}", if dry_run { "would write: " } else { "" });
        if !dry_run {
            write(c)?;
        }
    }
    Ok(changes.len())
}

pub fn run(args: NodeArgs) -> Result<(), String> {
    let request = match args.action {
        NodeAction::Evacuate { node } => NodeRequest::Evacuate(node),
        NodeAction::Restore { node } => NodeRequest::Restore(node),
        NodeAction::Shutdown { node } => NodeRequest::Shutdown(node),
        NodeAction::Sync => NodeRequest::Sync,
    };
    let written = round(&request, args.dry_run)?;
    if args.dry_run || args.wait == 0 {
        if written == 0 {
            println!("{request}: nothing to write");
        }
        return Ok(());
    }
    // The executor's loop: let Pacemaker carry out what was written, then write what that
    // changed (records of resources that came home are cleared, their constraints removed).
    let deadline = Instant::now() + Duration::from_secs(args.wait);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "{request}: the cluster did not settle within {} s",
                args.wait
            ));
        }
        tool(&[
            "crm_resource",
            "--wait",
            &format!("--timeout={}s", left.as_secs().max(1)),
        ])?;
        if round(&NodeRequest::Sync, false)? == 0 {
            println!("{request}: settled");
            return Ok(());
        }
    }
}
