//! The resource's utilization attributes (`autoset_utilization_*`, `unset_utilization_*`), kept
//! off the monitor's hot path: the wanted values come from the domain XML the action already read
//! (`<vcpu>`, its `current` count when given, and `<memory>` in MiB), and are compared with what
//! this node last wrote, kept in `$HA_RSCTMP/VirtualDomain-<rsc>.utilization`. Only a difference
//! (or no record yet) starts `crm_resource`, as an argument vector (no shell), bounded by the
//! action's deadline; a failure is logged and retried on the next monitor, never fatal.
//!
//! heartbeat's agent updates them on every monitor (so also when `start` and `migrate_from` wait
//! for the domain) with `crm_resource --utilization`: it reads the current value first and writes
//! only a different one, deletes an attribute when asked to unset it, and says nothing when there
//! is no CIB to talk to. The attribute names are `cpu`, `host_memory` and `hv_memory`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::clock::{Clock, Deadline};
use crate::config::UtilizationParams;
use crate::lock;
use crate::log::Log;

/// At most this long per `crm_resource` call.
pub const CALL_CAP_MS: u64 = 5_000;
/// Below this much time left, no call is started (the action's answer comes first).
pub const MIN_CALL_MS: u64 = 200;
const POLL_MS: u64 = 5;

/// What one attribute should become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    Set(u64),
    Delete,
}

impl Want {
    /// The text kept in the record: the value, or empty for a deleted attribute.
    fn record_text(&self) -> String {
        match self {
            Want::Set(v) => v.to_string(),
            Want::Delete => String::new(),
        }
    }
}

/// vCPUs and maximum memory as the domain XML gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sizes {
    pub vcpus: Option<u64>,
    pub memory_mib: Option<u64>,
}

/// `<memory unit=...>` in bytes per unit, as libvirt defines the units (default KiB).
fn unit_bytes(unit: &str) -> Option<u64> {
    Some(match unit {
        "b" | "bytes" => 1,
        "KB" => 1_000,
        "k" | "K" | "KiB" | "" => 1 << 10,
        "MB" => 1_000_000,
        "M" | "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "G" | "GiB" => 1 << 30,
        "TB" => 1_000_000_000_000,
        "T" | "TiB" => 1 << 40,
        _ => return None,
    })
}

/// Reads `<domain><vcpu>` and `<domain><memory>`; anything unreadable is `None` (not written).
pub fn sizes_from_xml(xml: &str) -> Sizes {
    let mut reader = Reader::from_str(xml);
    let mut depth = 0usize;
    let mut sizes = Sizes::default();
    // (element, unit or current count) of the depth-2 element being read.
    let mut open: Option<(String, Option<String>)> = None;
    loop {
        let Ok(event) = reader.read_event() else {
            return sizes;
        };
        match event {
            Event::Start(e) => {
                depth += 1;
                let tag = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                open = None;
                if depth == 2 && (tag == "vcpu" || tag == "memory") {
                    let key: &[u8] = if tag == "vcpu" { b"current" } else { b"unit" };
                    let attr = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == key)
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                    open = Some((tag, attr));
                }
            }
            Event::Text(t) => {
                if let Some((tag, attr)) = open.take() {
                    let Ok(text) = t.decode() else { continue };
                    let Ok(n) = text.trim().parse::<u64>() else {
                        continue;
                    };
                    if tag == "vcpu" {
                        let current = attr.and_then(|c| c.trim().parse::<u64>().ok());
                        sizes.vcpus = Some(current.unwrap_or(n));
                    } else if let Some(bytes) = unit_bytes(attr.as_deref().unwrap_or("")) {
                        sizes.memory_mib = n.checked_mul(bytes).map(|b| b >> 20);
                    }
                }
            }
            Event::End(_) => {
                open = None;
                depth = depth.saturating_sub(1);
            }
            Event::Eof => return sizes,
            _ => {}
        }
    }
}

/// Which attributes to touch and how, from the parameters (autoset wins over unset, as heartbeat).
pub fn wanted(p: &UtilizationParams, sizes: Sizes) -> Vec<(&'static str, Want)> {
    let mut out = Vec::new();
    let mut one = |name, autoset: bool, unset: bool, value: Option<u64>| {
        if autoset {
            if let Some(v) = value {
                out.push((name, Want::Set(v)));
            }
        } else if unset {
            out.push((name, Want::Delete));
        }
    };
    one("cpu", p.autoset_cpu, p.unset_cpu, sizes.vcpus);
    one(
        "host_memory",
        p.autoset_host_memory,
        p.unset_host_memory,
        sizes.memory_mib,
    );
    one(
        "hv_memory",
        p.autoset_hv_memory,
        p.unset_hv_memory,
        sizes.memory_mib,
    );
    out
}

/// Why a CIB call did not work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CibError {
    /// No CIB to talk to (no cluster here, as under ocf-tester): nothing to do.
    #[error("the CIB is not available")]
    NotConnected,
    #[error("{0}")]
    Failed(String),
}

/// The resource's utilization attributes in the CIB.
pub trait Cib {
    /// The current value, `None` when unset.
    fn get(&self, rsc: &str, attr: &str, timeout_ms: u64) -> Result<Option<String>, CibError>;
    fn set(&self, rsc: &str, attr: &str, value: &str, timeout_ms: u64) -> Result<(), CibError>;
    fn delete(&self, rsc: &str, attr: &str, timeout_ms: u64) -> Result<(), CibError>;
}

/// [`Cib`] through Pacemaker's `crm_resource` (which honours `CIB_file`, as tests use).
pub struct CrmResource {
    pub program: PathBuf,
}

impl Default for CrmResource {
    /// `crm_resource` from `PATH`, else from `/usr/sbin` or `/sbin` (where Pacemaker installs it,
    /// and which an executor's `PATH` may lack).
    fn default() -> Self {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let program = std::env::split_paths(&path)
            .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
            .map(|d| d.join("crm_resource"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("crm_resource"));
        Self { program }
    }
}

impl CrmResource {
    /// Runs `crm_resource --resource=<rsc> --utilization <args>`; stdout on exit 0.
    fn run(&self, rsc: &str, args: &[String], timeout_ms: u64) -> Result<String, CibError> {
        let mut child = Command::new(&self.program)
            .arg(format!("--resource={rsc}"))
            .arg("--utilization")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| CibError::Failed(format!("cannot run {}: {e}", self.program.display())))?;
        let mut waited_ms = 0;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if waited_ms >= timeout_ms => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(CibError::Failed(format!(
                        "crm_resource did not finish within {timeout_ms} ms and was killed"
                    )));
                }
                Ok(None) => {
                    std::thread::sleep(Duration::from_millis(POLL_MS));
                    waited_ms += POLL_MS;
                }
                Err(e) => return Err(CibError::Failed(e.to_string())),
            }
        };
        // Its output is a line or two: it fits in the pipes while it runs.
        let read = |r: Option<&mut dyn Read>| {
            let mut s = String::new();
            if let Some(r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        };
        let stdout = read(child.stdout.as_mut().map(|s| s as &mut dyn Read));
        let stderr = read(child.stderr.as_mut().map(|s| s as &mut dyn Read));
        if stderr.to_ascii_lowercase().contains("not connected") {
            return Err(CibError::NotConnected);
        }
        if status.success() {
            Ok(stdout)
        } else {
            Err(CibError::Failed(format!(
                "crm_resource {} ({status}): {}",
                args.join(" "),
                stderr.trim()
            )))
        }
    }
}

impl Cib for CrmResource {
    fn get(&self, rsc: &str, attr: &str, timeout_ms: u64) -> Result<Option<String>, CibError> {
        let out = self.run(
            rsc,
            &[format!("--get-parameter={attr}"), "--quiet".into()],
            timeout_ms,
        )?;
        Ok(Some(out.trim().to_owned()).filter(|v| !v.is_empty()))
    }
    fn set(&self, rsc: &str, attr: &str, value: &str, timeout_ms: u64) -> Result<(), CibError> {
        self.run(
            rsc,
            &[
                format!("--set-parameter={attr}"),
                format!("--parameter-value={value}"),
            ],
            timeout_ms,
        )
        .map(drop)
    }
    fn delete(&self, rsc: &str, attr: &str, timeout_ms: u64) -> Result<(), CibError> {
        self.run(rsc, &[format!("--delete-parameter={attr}")], timeout_ms)
            .map(drop)
    }
}

/// The record of what this node last wrote for the resource.
pub fn record_path(dir: &Path, instance: &str) -> PathBuf {
    dir.join(format!(
        "VirtualDomain-{}.utilization",
        lock::file_component(instance)
    ))
}

fn read_record(dir: &Path, instance: &str) -> BTreeMap<String, String> {
    let text = lock::read_small(&record_path(dir, instance))
        .ok()
        .flatten()
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Forgets what this node wrote (after the domain left it), so the next start asks the CIB again.
pub fn forget(dir: &Path, instance: &str) {
    let _ = std::fs::remove_file(record_path(dir, instance));
}

/// Brings the attributes to `wanted`, touching the CIB only for values that differ from the record.
/// Returns how many CIB calls were made (for tests and debug logs).
pub fn update(
    cib: &dyn Cib,
    dir: &Path,
    instance: &str,
    wanted: &[(&'static str, Want)],
    deadline: Deadline,
    clock: &dyn Clock,
    log: &Log,
) -> usize {
    let record = read_record(dir, instance);
    let mut next = record.clone();
    let mut calls = 0;
    for (attr, want) in wanted {
        let text = want.record_text();
        if record.get(*attr) == Some(&text) {
            continue;
        }
        let budget = deadline.remaining_ms(clock).min(CALL_CAP_MS);
        if budget < MIN_CALL_MS {
            log.debug("utilization: no time left in this action; next monitor");
            break;
        }
        let result = match want {
            Want::Set(v) => {
                // First time on this node: the CIB may already say so (heartbeat asks first too).
                let current = if record.contains_key(*attr) {
                    Ok(None)
                } else {
                    calls += 1;
                    cib.get(instance, attr, budget)
                };
                match current {
                    Ok(Some(c)) if c == text => Ok(()),
                    Ok(_) => {
                        calls += 1;
                        let budget = deadline.remaining_ms(clock).min(CALL_CAP_MS);
                        cib.set(instance, attr, &text, budget).inspect(|()| {
                            log.info(&format!("utilization {attr} set to {v}"));
                        })
                    }
                    Err(e) => Err(e),
                }
            }
            Want::Delete => {
                calls += 1;
                cib.delete(instance, attr, budget).inspect(|()| {
                    log.info(&format!("utilization {attr} removed"));
                })
            }
        };
        match result {
            Ok(()) => {
                next.insert((*attr).to_owned(), text);
            }
            Err(CibError::NotConnected) => {
                log.debug("utilization: the CIB is not available; not written");
                break;
            }
            Err(CibError::Failed(why)) => {
                log.warn(&format!("utilization {attr} not written: {why}"));
            }
        }
    }
    if next != record {
        let text: String = next.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        if let Err(e) = lock::write_atomic(&record_path(dir, instance), &text) {
            log.warn(&format!("utilization record: {e}"));
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::clock::ManualClock;

    /// An in-memory CIB that counts calls and can be made unavailable or failing.
    #[derive(Default)]
    struct MemCib {
        attrs: RefCell<BTreeMap<String, String>>,
        calls: RefCell<Vec<String>>,
        down: bool,
        failing: bool,
    }

    impl MemCib {
        fn call(&self, what: String) -> Result<(), CibError> {
            self.calls.borrow_mut().push(what);
            if self.down {
                Err(CibError::NotConnected)
            } else if self.failing {
                Err(CibError::Failed("refused".into()))
            } else {
                Ok(())
            }
        }
    }

    impl Cib for MemCib {
        fn get(&self, _r: &str, attr: &str, _t: u64) -> Result<Option<String>, CibError> {
            self.call(format!("get {attr}"))?;
            Ok(self.attrs.borrow().get(attr).cloned())
        }
        fn set(&self, _r: &str, attr: &str, value: &str, _t: u64) -> Result<(), CibError> {
            self.call(format!("set {attr}={value}"))?;
            self.attrs.borrow_mut().insert(attr.into(), value.into());
            Ok(())
        }
        fn delete(&self, _r: &str, attr: &str, _t: u64) -> Result<(), CibError> {
            self.call(format!("delete {attr}"))?;
            self.attrs.borrow_mut().remove(attr);
            Ok(())
        }
    }

    const ALL: UtilizationParams = UtilizationParams {
        autoset_cpu: true,
        autoset_host_memory: true,
        autoset_hv_memory: true,
        unset_cpu: false,
        unset_host_memory: false,
        unset_hv_memory: false,
    };

    #[test]
    fn sizes_come_from_the_domain_xml() {
        let xml = "<domain type='qemu'><name>vm</name><memory unit='MiB'>512</memory>\
                   <vcpu placement='static'>4</vcpu><devices><memory unit='GiB'>9</memory>\
                   <vcpu>99</vcpu></devices></domain>";
        assert_eq!(
            sizes_from_xml(xml),
            Sizes {
                vcpus: Some(4),
                memory_mib: Some(512)
            }
        );
        let xml = "<domain><memory>1048576</memory><vcpu current='2'>8</vcpu></domain>";
        assert_eq!(
            sizes_from_xml(xml),
            Sizes {
                vcpus: Some(2),
                memory_mib: Some(1024)
            },
            "KiB by default; the current vCPU count, as virsh dominfo shows"
        );
        assert_eq!(
            sizes_from_xml("<domain><memory unit='GB'>1</memory></domain>").memory_mib,
            Some(953),
            "decimal units, truncated to MiB"
        );
        assert_eq!(
            sizes_from_xml("<domain><memory unit='parsec'>1</memory><vcpu>x</vcpu></domain>"),
            Sizes::default()
        );
        assert_eq!(
            sizes_from_xml(&format!(
                "<domain><memory unit='TiB'>{}</memory></domain>",
                u64::MAX
            ))
            .memory_mib,
            None,
            "overflow is unreadable, not wrapped"
        );
    }

    #[test]
    fn wanted_follows_the_parameters() {
        let sizes = Sizes {
            vcpus: Some(2),
            memory_mib: Some(32),
        };
        assert_eq!(
            wanted(&ALL, sizes),
            vec![
                ("cpu", Want::Set(2)),
                ("host_memory", Want::Set(32)),
                ("hv_memory", Want::Set(32))
            ]
        );
        let p = UtilizationParams {
            autoset_cpu: false,
            unset_cpu: true,
            autoset_host_memory: false,
            unset_host_memory: false,
            ..ALL
        };
        assert_eq!(
            wanted(&p, sizes),
            vec![("cpu", Want::Delete), ("hv_memory", Want::Set(32))]
        );
        assert_eq!(wanted(&ALL, Sizes::default()), vec![], "unknown: untouched");
    }

    #[test]
    fn the_cib_is_touched_only_when_a_value_changes() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(0);
        let log = Log::memory();
        let d = Deadline::after(&clock, 10_000);
        let cib = MemCib::default();
        cib.attrs
            .borrow_mut()
            .insert("hv_memory".into(), "32".into());
        let want = [("cpu", Want::Set(2)), ("hv_memory", Want::Set(32))];
        // First time: ask, then write only what differs.
        assert_eq!(update(&cib, dir.path(), "vm1", &want, d, &clock, &log), 3);
        assert_eq!(
            *cib.calls.borrow(),
            vec!["get cpu", "set cpu=2", "get hv_memory"]
        );
        // Unchanged: no call at all (the monitor's hot path).
        cib.calls.borrow_mut().clear();
        assert_eq!(update(&cib, dir.path(), "vm1", &want, d, &clock, &log), 0);
        assert!(cib.calls.borrow().is_empty());
        // A change: one write, no read.
        let want = [("cpu", Want::Set(4)), ("hv_memory", Want::Delete)];
        assert_eq!(update(&cib, dir.path(), "vm1", &want, d, &clock, &log), 2);
        assert_eq!(*cib.calls.borrow(), vec!["set cpu=4", "delete hv_memory"]);
        assert_eq!(cib.attrs.borrow().get("cpu").map(String::as_str), Some("4"));
        assert!(!cib.attrs.borrow().contains_key("hv_memory"));
        cib.calls.borrow_mut().clear();
        assert_eq!(update(&cib, dir.path(), "vm1", &want, d, &clock, &log), 0);
        // Forgotten (the domain left): asked again; the CIB already holds cpu=4, so no write.
        forget(dir.path(), "vm1");
        assert_eq!(update(&cib, dir.path(), "vm1", &want, d, &clock, &log), 2);
        assert_eq!(*cib.calls.borrow(), vec!["get cpu", "delete hv_memory"]);
    }

    #[test]
    fn failures_are_logged_and_retried_never_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(0);
        let d = Deadline::after(&clock, 10_000);
        let want = [("cpu", Want::Set(2))];
        let log = Log::memory();
        let down = MemCib {
            down: true,
            ..MemCib::default()
        };
        update(&down, dir.path(), "vm1", &want, d, &clock, &log);
        assert!(!record_path(dir.path(), "vm1").exists(), "nothing recorded");
        assert!(
            log.lines().iter().all(|l| !l.contains("WARN")),
            "{:?}",
            log.lines()
        );
        let failing = MemCib {
            failing: true,
            ..MemCib::default()
        };
        let log = Log::memory();
        update(&failing, dir.path(), "vm1", &want, d, &clock, &log);
        assert!(
            log.lines()
                .iter()
                .any(|l| l.contains("utilization cpu not written")),
            "{:?}",
            log.lines()
        );
        // Retried next time.
        assert_eq!(
            update(&failing, dir.path(), "vm1", &want, d, &clock, &log),
            1
        );
        // No time left: no call.
        let late = Deadline::after(&clock, 100);
        assert_eq!(
            update(
                &MemCib::default(),
                dir.path(),
                "vm1",
                &want,
                late,
                &clock,
                &log
            ),
            0
        );
    }

    #[test]
    fn crm_resource_is_bounded_and_its_absence_is_an_error_not_a_panic() {
        let missing = CrmResource {
            program: PathBuf::from("/nonexistent/crm_resource"),
        };
        assert!(matches!(
            missing.get("vm1", "cpu", 1000),
            Err(CibError::Failed(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        let hang = dir.path().join("crm_resource");
        std::fs::write(&hang, "#!/bin/sh\nexec sleep 60\n").unwrap();
        std::fs::set_permissions(&hang, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let slow = CrmResource { program: hang };
        let e = slow.set("vm1", "cpu", "2", 300).unwrap_err();
        assert!(e.to_string().contains("killed"), "{e}");
    }
}
