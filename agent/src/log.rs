//! The agent's log: lines on stderr as they happen (`VirtualDomain(<instance>)[<pid>]: LEVEL: ...`),
//! debug lines only with `HA_debug=1`; an in-memory sink for tests. Callers never pass parameter
//! values marked private or the domain XML.

use std::io::Write;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "DEBUG",
            Self::Info => "INFO",
            Self::Warn => "WARNING",
            Self::Error => "ERROR",
        }
    }
}

/// Where log lines go.
#[derive(Debug)]
pub struct Log {
    prefix: String,
    debug: bool,
    to_stderr: bool,
    lines: Mutex<Vec<String>>,
}

impl Log {
    /// Lines to stderr at once.
    pub fn stderr(instance: &str, debug: bool) -> Self {
        Self {
            prefix: format!("VirtualDomain({instance})[{}]", std::process::id()),
            debug,
            to_stderr: true,
            lines: Mutex::new(Vec::new()),
        }
    }
    /// Lines kept in memory (tests, simulator); debug lines included.
    pub fn memory() -> Self {
        Self {
            prefix: "VirtualDomain".into(),
            debug: true,
            to_stderr: false,
            lines: Mutex::new(Vec::new()),
        }
    }
    pub fn log(&self, level: Level, message: &str) {
        if level == Level::Debug && !self.debug {
            return;
        }
        let line = format!("{}: {}: {}", self.prefix, level.as_str(), message);
        if self.to_stderr {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        } else {
            self.lines
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(line);
        }
    }
    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message)
    }
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message)
    }
    pub fn warn(&self, message: &str) {
        self.log(Level::Warn, message)
    }
    pub fn error(&self, message: &str) {
        self.log(Level::Error, message)
    }
    /// The in-memory lines.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
