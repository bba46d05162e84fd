//! The daemon's log: lines in the Pacemaker log's shape (`Mon DD HH:MM:SS.mmm host
//! highlander-schedulerd[pid] (function) \tlevel: message`, UTC) appended to
//! `PCMK_logfile` (default `/var/log/pacemaker/pacemaker.log`), and to stderr.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// Pacemaker's default log file.
pub const DEFAULT_LOG: &str = "/var/log/pacemaker/pacemaker.log";

/// Seconds since the epoch.
pub fn now_secs() -> i64 {
    now_ms() / 1000
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Where log lines go.
#[derive(Debug, Clone)]
pub struct Log {
    file: Option<PathBuf>,
    host: String,
    pid: u32,
    stderr: bool,
}

impl Log {
    /// Logs to `file` (None: stderr only).
    pub fn new(file: Option<PathBuf>, stderr: bool) -> Log {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "localhost".into());
        Log {
            file,
            host,
            pid: std::process::id(),
            stderr,
        }
    }

    /// The log file Pacemaker's daemons use here (`PCMK_logfile`, else the default).
    pub fn pacemaker_log_file() -> Option<PathBuf> {
        match std::env::var("PCMK_logfile") {
            Ok(v) if v == "none" || v == "/dev/null" => None,
            Ok(v) if !v.is_empty() => Some(PathBuf::from(v)),
            _ => Some(PathBuf::from(DEFAULT_LOG)),
        }
    }

    pub fn error(&self, msg: &str) {
        self.line("pe_calc", "error", msg);
    }
    pub fn warn(&self, msg: &str) {
        self.line("pe_calc", "warning", msg);
    }
    pub fn notice(&self, msg: &str) {
        self.line("pe_calc", "notice", msg);
    }
    pub fn info(&self, msg: &str) {
        self.line("pe_calc", "info", msg);
    }

    /// A line as if logged by the Pacemaker function `function`.
    pub fn line(&self, function: &str, level: &str, msg: &str) {
        let ms = now_ms();
        let line = format!(
            "{}.{:03} {} {:<20}[{}] ({function}) \t{level}: {msg}\n",
            stamp(ms.div_euclid(1000)),
            ms.rem_euclid(1000),
            self.host,
            "highlander-schedulerd",
            self.pid
        );
        if self.stderr {
            eprint!("{line}");
        }
        if let Some(path) = &self.file {
            if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}

/// `Mon DD HH:MM:SS` in UTC.
pub fn stamp(secs: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    format!(
        "{} {day:02} {:02}:{:02}:{:02}",
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn stamps_are_civil_dates() {
        assert_eq!(super::stamp(0), "Jan 01 00:00:00");
        assert_eq!(super::stamp(1_700_000_000), "Nov 14 22:13:20");
    }
}
