//! `highlander-schedulerd`: run without a subcommand (as pacemakerd starts
//! `/usr/lib/pacemaker/pacemaker-schedulerd`), it serves the `pengine` IPC service;
//! `install`/`uninstall` put it in place of Pacemaker's scheduler and back; `counts` prints
//! what it has done.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use highlander_schedulerd::daemon::{COUNTS_FILE, Config, Daemon};
use highlander_schedulerd::guard::Mode;
use highlander_schedulerd::log::Log;
use highlander_schedulerd::{ffi, install, message, series, wire};

/// The optional configuration file (`mode = guarded|shadow|trusted`).
const CONFIG_FILE: &str = "/etc/highlander/schedulerd.conf";

#[derive(Parser)]
#[command(name = "highlander-schedulerd", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// The libqb IPC service name.
    #[arg(long, default_value = "pengine")]
    name: String,
    /// Where inputs are saved.
    #[arg(long, default_value = series::STATE_DIR)]
    state_dir: PathBuf,
    /// Overrides the mode the CIB and the config file set.
    #[arg(long)]
    mode: Option<String>,
    /// Pacemaker's simulator, which the guard runs.
    #[arg(long, default_value = "/usr/sbin/crm_simulate")]
    crm_simulate: PathBuf,
    /// Log to stderr too.
    #[arg(long)]
    verbose: bool,
    /// Log file (default: $PCMK_logfile, else /var/log/pacemaker/pacemaker.log).
    #[arg(long)]
    logfile: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Divert Pacemaker's scheduler (dpkg-divert), install this binary, restart the scheduler.
    Install,
    /// Remove this binary, restore Pacemaker's scheduler, restart it.
    Uninstall,
    /// Print the counts of the running daemon (transitions, plans, divergences, fallbacks).
    Counts,
    /// Connect to the running daemon and send it a `hello` (exit 0 when it acks).
    Ping,
    /// Ask the running scheduler (ours or Pacemaker's: the same protocol) to plan a CIB, as the
    /// controller does; prints each reply's round trip in ms, and the last reply with --reply.
    Request {
        /// The CIB to plan (plain XML).
        cib: PathBuf,
        /// How many requests to send, one after another.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Print the last reply (the whole message, graph included).
        #[arg(long)]
        reply: bool,
    },
    /// Write the man page into DIR (for packaging).
    #[command(hide = true)]
    Man {
        /// The directory to write `highlander-schedulerd.8` into.
        #[arg(long = "out", value_name = "DIR")]
        out: PathBuf,
    },
}

/// Writes `highlander-schedulerd.8` into `dir`, from the clap definition.
fn write_man_page(dir: &std::path::Path) -> Result<(), String> {
    use clap::CommandFactory;
    let path = dir.join("highlander-schedulerd.8");
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .section("8")
        .render(&mut buf)
        .map_err(|e| format!("cannot render {}: {e}", path.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(&path, buf).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse_mode(v: &str) -> Result<Mode, String> {
    Mode::parse(v).ok_or_else(|| format!("mode '{v}': expected guarded, shadow or trusted"))
}

/// The mode in the config file, if it sets one.
fn config_file_mode() -> Result<Option<Mode>, String> {
    let Ok(text) = std::fs::read_to_string(CONFIG_FILE) else {
        return Ok(None);
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some((k, v)) = line.split_once('=') {
            if k.trim() == "mode" {
                return parse_mode(v)
                    .map(Some)
                    .map_err(|e| format!("{CONFIG_FILE}: {e}"));
            }
        }
    }
    Ok(None)
}

/// `PCMK_ipc_buffer`, bounded as Pacemaker bounds it (default 128 KiB, at least 12336).
fn buffer_size() -> u32 {
    match std::env::var("PCMK_ipc_buffer")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(n) if n > 0 => n.clamp(12_336, u64::from(u32::MAX)) as u32,
        _ => wire::DEFAULT_BUFFER_SIZE,
    }
}

fn serve(cli: Cli) -> Result<(), String> {
    let forced_mode = cli.mode.as_deref().map(parse_mode).transpose()?;
    let default_mode = config_file_mode()?.unwrap_or_default();
    let log = Log::new(
        cli.logfile.clone().or_else(Log::pacemaker_log_file),
        cli.verbose,
    );
    std::fs::create_dir_all(&cli.state_dir)
        .map_err(|e| format!("{}: {e}", cli.state_dir.display()))?;
    let cfg = Config {
        state_dir: cli.state_dir,
        default_mode,
        forced_mode,
        crm_simulate: cli.crm_simulate,
        crm_resource: PathBuf::from("/usr/sbin/crm_resource"),
        buffer_size: buffer_size(),
        cluster_uid: ffi::user_ids("hacluster").map(|(uid, _)| uid),
    };
    log.notice(&format!(
        "Starting highlander-schedulerd (IPC service '{}', mode {})",
        cli.name,
        forced_mode.unwrap_or(default_mode).as_str()
    ));
    let daemon = Daemon::new(cfg.clone(), log.clone());
    ffi::serve(&cli.name, cfg.buffer_size, Box::new(daemon)).map_err(|e| e.to_string())?;
    log.notice("Shutting down highlander-schedulerd");
    Ok(())
}

/// Sends a `hello` to the service `name` and waits for its ack.
fn ping(name: &str) -> Result<(), String> {
    let client =
        ffi::Client::connect(name, wire::DEFAULT_BUFFER_SIZE as usize).map_err(|errno| {
            format!(
                "cannot connect to '{name}': {}",
                std::io::Error::from_raw_os_error(errno)
            )
        })?;
    let hello = "<create_request_adv t=\"crmd\" subt=\"request\" reference=\"hello-0\" crm_task=\"hello\" crm_sys_to=\"pengine\" crm_sys_from=\"ping\"/>";
    let msg = wire::encode(
        1,
        wire::FLAG_CLIENT_RESPONSE,
        hello,
        wire::DEFAULT_BUFFER_SIZE,
    )
    .map_err(|e| e.to_string())?;
    client.send(&msg).map_err(|e| format!("send: errno {e}"))?;
    let ack = client
        .recv_response(wire::DEFAULT_BUFFER_SIZE as usize, 5000)
        .map_err(|e| format!("no ack: errno {e}"))?;
    let frame = wire::decode(&ack).map_err(|e| e.to_string())?;
    println!("{}", frame.xml);
    Ok(())
}

/// Sends `repeat` `pe_calc` requests for the CIB in `path` and prints each round trip.
fn request(name: &str, path: &std::path::Path, repeat: u32, show: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cib = text
        .find("<cib")
        .map(|i| text[i..].trim())
        .ok_or_else(|| format!("{}: no <cib> element", path.display()))?;
    let size = buffer_size() as usize;
    let client = ffi::Client::connect(name, size).map_err(|errno| {
        format!(
            "cannot connect to '{name}': {}",
            std::io::Error::from_raw_os_error(errno)
        )
    })?;
    for i in 0..repeat {
        let reference = format!("pe_calc-request-{}-{i}", std::process::id());
        let xml = format!(
            "<create_request_adv origin=\"request\" t=\"crmd\" version=\"{}\" subt=\"request\" reference=\"{reference}\" crm_task=\"pe_calc\" crm_sys_to=\"pengine\" crm_sys_from=\"{}_highlander\"><crm_xml>{cib}</crm_xml></create_request_adv>",
            message::FEATURE_SET,
            std::process::id()
        );
        let msg = wire::encode(i + 1, 0, &xml, size as u32).map_err(|e| e.to_string())?;
        let t = std::time::Instant::now();
        client.send(&msg).map_err(|e| format!("send: errno {e}"))?;
        let (reply, text) = loop {
            let bytes = client
                .recv_event(size, 600_000)
                .map_err(|e| format!("no reply: errno {e}"))?;
            let frame = wire::decode(&bytes).map_err(|e| e.to_string())?;
            let req = message::parse_request(&frame.xml).map_err(|e| e.to_string())?;
            if req.attr("reference") == Some(reference.as_str()) {
                break (req, frame.xml);
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        println!(
            "reply {i}: {ms:.2} ms, input {}",
            reply.attr("crm-tgraph-in").unwrap_or("(not saved)")
        );
        if show && i + 1 == repeat {
            println!("{text}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => serve(cli),
        Some(Cmd::Install) => std::env::current_exe()
            .map_err(|e| e.to_string())
            .and_then(|exe| install::install(&exe).map_err(|e| e.to_string()))
            .map(|done| done.iter().for_each(|l| println!("{l}"))),
        Some(Cmd::Uninstall) => install::uninstall()
            .map_err(|e| e.to_string())
            .map(|done| done.iter().for_each(|l| println!("{l}"))),
        Some(Cmd::Ping) => ping(&cli.name),
        Some(Cmd::Man { ref out }) => write_man_page(out),
        Some(Cmd::Request {
            ref cib,
            repeat,
            reply,
        }) => request(&cli.name, cib, repeat, reply),
        Some(Cmd::Counts) => std::fs::read_to_string(cli.state_dir.join(COUNTS_FILE))
            .map_err(|e| {
                format!(
                    "{}: {e} (has the daemon planned a transition yet?)",
                    COUNTS_FILE
                )
            })
            .map(|t| print!("{t}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("highlander-schedulerd: {e}");
            ExitCode::from(1)
        }
    }
}
