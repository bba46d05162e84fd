//! The per-resource migration journal, `$HA_RSCTMP/VirtualDomain-<resource>.migrations.json`: the
//! last attempts (action, source, target, phase, libvirt's outcome, the answer), rewritten
//! atomically and fsync'd at each step. For diagnosis only: the agent never decides from it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::lock::{StateError, file_component, read_small, write_atomic};

/// Entries kept.
pub const KEEP: usize = 32;

pub fn path(dir: &Path, instance: &str) -> PathBuf {
    dir.join(format!(
        "VirtualDomain-{}.migrations.json",
        file_component(instance)
    ))
}

/// One step of one migration action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub action: &'a str,
    pub domain: &'a str,
    pub source: &'a str,
    pub target: &'a str,
    /// `begin`, `migrate-called`, `migrate-returned`, `abort`, `answer`.
    pub phase: &'a str,
    pub detail: &'a str,
}

/// Appends an entry (keeping the last [`KEEP`]); an unreadable or corrupt journal starts anew.
pub fn append(dir: &Path, instance: &str, e: &Entry) -> Result<(), StateError> {
    let p = path(dir, instance);
    let mut entries: Vec<Value> = read_small(&p)
        .ok()
        .flatten()
        .and_then(|text| serde_json::from_str::<Vec<Value>>(&text).ok())
        .unwrap_or_default();
    let at_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    entries.push(json!({
        "at_unix_ms": at_unix_ms,
        "pid": std::process::id(),
        "action": e.action,
        "domain": e.domain,
        "source": e.source,
        "target": e.target,
        "phase": e.phase,
        "detail": e.detail,
    }));
    let skip = entries.len().saturating_sub(KEEP);
    let kept: Vec<Value> = entries.into_iter().skip(skip).collect();
    let text = serde_json::to_string_pretty(&kept).unwrap_or_else(|_| "[]".into());
    write_atomic(&p, &(text + "\n"))
}

/// All entries, oldest first (empty when there is no journal).
pub fn read(dir: &Path, instance: &str) -> Vec<Value> {
    read_small(&path(dir, instance))
        .ok()
        .flatten()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_and_keeps_the_last_entries() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(KEEP + 5) {
            let detail = format!("step {i}");
            append(
                dir.path(),
                "vm:1",
                &Entry {
                    action: "migrate_to",
                    domain: "vm1",
                    source: "a",
                    target: "b",
                    phase: "begin",
                    detail: &detail,
                },
            )
            .unwrap();
        }
        let all = read(dir.path(), "vm:1");
        assert_eq!(all.len(), KEEP);
        assert_eq!(all[0]["detail"], "step 5");
        assert_eq!(all[KEEP - 1]["detail"], format!("step {}", KEEP + 4));
        assert_eq!(all[0]["target"], "b");
        // A corrupt journal is replaced, not fatal.
        std::fs::write(path(dir.path(), "vm:1"), "{not json").unwrap();
        append(
            dir.path(),
            "vm:1",
            &Entry {
                action: "migrate_from",
                domain: "vm1",
                source: "a",
                target: "b",
                phase: "answer",
                detail: "0",
            },
        )
        .unwrap();
        assert_eq!(read(dir.path(), "vm:1").len(), 1);
    }
}
