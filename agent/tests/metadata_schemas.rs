//! The agent's meta-data validates against the three schemas in use (ra-api-1.dtd as ocf-tester
//! checks it, resource-agents' metadata.rng, and OCF 1.1's ra-api.rng), and broken documents fail.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use highlander_agent::params::VIRTUAL_DOMAIN;
use ocf_metadata::{MetadataProfile, render_metadata};

const RA_DIR: &str = "/usr/share/resource-agents";

fn ocf11_rng() -> PathBuf {
    let rng = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/ocf-1.1/ra-api.rng");
    assert!(
        rng.is_file(),
        "{} is missing: the OCF 1.1 schema is kept in the repository under testdata/",
        rng.display()
    );
    rng
}

/// Runs xmllint on `doc` given on stdin, from `dir`; returns (success, stderr).
fn xmllint(dir: &str, args: &[&str], doc: &str) -> (bool, String) {
    let mut child = Command::new("xmllint")
        .args(args)
        .arg("-")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("xmllint (libxml2-utils) must be installed: run tools/deps.sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(doc.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("xmllint");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn dtd(doc: &str) -> (bool, String) {
    // ocf-tester's own check: the DTD is resolved relative to /usr/share/resource-agents.
    xmllint(RA_DIR, &["--noout", "--valid"], doc)
}

fn relaxng(schema: &Path, doc: &str) -> (bool, String) {
    let schema = schema.to_str().expect("utf-8 path");
    xmllint(RA_DIR, &["--noout", "--relaxng", schema], doc)
}

#[test]
fn portable_metadata_is_valid_against_all_three_schemas() {
    let doc = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Portable);
    let (ok, err) = dtd(&doc);
    assert!(ok, "DTD: {err}");
    let (ok, err) = relaxng(&Path::new(RA_DIR).join("metadata.rng"), &doc);
    assert!(ok, "metadata.rng: {err}");
    let (ok, err) = relaxng(&ocf11_rng(), &doc);
    assert!(ok, "OCF 1.1: {err}");
}

#[test]
fn ocf11_metadata_is_valid_against_the_ocf_1_1_schema() {
    let doc = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Ocf11);
    let (ok, err) = relaxng(&ocf11_rng(), &doc);
    assert!(ok, "OCF 1.1: {err}");
    assert!(
        doc.contains("reload-agent"),
        "the 1.1 profile advertises reload-agent"
    );
    // This is the deliberate trade-off: the DTD cannot express reload-agent or reloadable.
    let (ok, _) = dtd(&doc);
    assert!(
        !ok,
        "the DTD must reject the OCF 1.1 document (reload-agent, reloadable)"
    );
}

#[test]
fn broken_documents_fail_each_validator() {
    let doc = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Portable);
    // No DOCTYPE: ocf-tester's DTD step fails ("no DTD found").
    let no_doctype: String = doc
        .lines()
        .filter(|l| !l.starts_with("<!DOCTYPE"))
        .collect::<Vec<_>>()
        .join("\n");
    let (ok, err) = dtd(&no_doctype);
    assert!(!ok && err.contains("DTD"), "{err}");
    // An action without its required timeout.
    let no_timeout = doc.replacen(r#" timeout="90s""#, "", 1);
    assert!(!dtd(&no_timeout).0);
    assert!(!relaxng(&Path::new(RA_DIR).join("metadata.rng"), &no_timeout).0);
    assert!(!relaxng(&ocf11_rng(), &no_timeout).0);
    // A parameter content type none of them knows.
    let bad_type = doc.replacen(r#"type="boolean""#, r#"type="bool""#, 1);
    assert!(!dtd(&bad_type).0);
    assert!(!relaxng(&Path::new(RA_DIR).join("metadata.rng"), &bad_type).0);
    assert!(!relaxng(&ocf11_rng(), &bad_type).0);
}

#[test]
fn all_27_heartbeat_parameters_are_advertised_with_their_defaults() {
    // Names and defaults of heartbeat's VirtualDomain 4.12 meta-data, as a drop-in must keep them.
    let expected: [(&str, Option<&str>); 27] = [
        ("config", None),
        ("hypervisor", None),
        ("force_stop", Some("0")),
        ("migration_transport", Some("")),
        ("migration_user", None),
        ("migration_downtime", Some("0")),
        ("migration_speed", Some("0")),
        ("migration_network_suffix", Some("")),
        ("migrateuri", None),
        ("migrate_options", None),
        ("monitor_scripts", Some("")),
        ("autoset_utilization_cpu", Some("true")),
        ("autoset_utilization_host_memory", Some("true")),
        ("autoset_utilization_hv_memory", Some("true")),
        ("unset_utilization_cpu", Some("false")),
        ("unset_utilization_host_memory", Some("false")),
        ("unset_utilization_hv_memory", Some("false")),
        ("migrateport", None),
        ("remoteuri", None),
        // heartbeat's meta-data omits these two defaults; its code defaults both to false.
        ("save_config_on_stop", Some("false")),
        ("sync_config_on_stop", Some("false")),
        ("snapshot", Some("")),
        ("backingfile", Some("")),
        ("stateless", Some("false")),
        ("copyindirs", Some("")),
        ("shutdown_mode", Some("")),
        ("start_resources", Some("false")),
    ];
    let got: Vec<(&str, Option<&str>)> = VIRTUAL_DOMAIN
        .parameters
        .iter()
        .map(|p| (p.name, p.default))
        .collect();
    assert_eq!(got, expected.to_vec());
    assert!(
        VIRTUAL_DOMAIN
            .parameter("config")
            .is_some_and(|p| p.required && p.unique)
    );
}

/// Both documents say that migrate_to is atomic and truthful, that pengine plans this agent with
/// `migration-model=atomic` by default, and that under Pacemaker's own scheduler an interrupted
/// migration still costs a reboot (no claim that it never does); the OCF 1.1 one also carries it as `<special
/// tag="highlander">`, which OCF 1.1's schema accepts. A second `<special>` block is refused by it,
/// so the check can fail.
#[test]
fn metadata_advertises_the_atomic_migration_default() {
    for profile in [MetadataProfile::Portable, MetadataProfile::Ocf11] {
        let doc = render_metadata(&VIRTUAL_DOMAIN, profile);
        assert!(
            doc.contains("Its migrate_to is atomic and truthful")
                && doc.contains("migration-model=atomic by default")
                && doc.contains("migration-model=two-phase"),
            "{profile:?} longdesc:\n{doc}"
        );
        let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("own scheduler (pacemaker-schedulerd) recovers it by stopping")
                && flat.contains("a reboot of the guest")
                && !flat.contains("never costs a reboot"),
            "{profile:?}: the longdesc names the scheduler under which a migration keeps the guest \
             running:\n{doc}"
        );
    }
    let doc = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Ocf11);
    assert!(doc.contains(r#"<special tag="highlander">"#), "{doc}");
    assert!(
        doc.contains(r#"<migrate_to atomic="1" truthful="1"/>"#),
        "{doc}"
    );
    assert!(
        doc.contains(r#"<migration-model default="atomic" meta-attribute="migration-model"/>"#),
        "{doc}"
    );
    let (ok, err) = relaxng(&ocf11_rng(), &doc);
    assert!(ok, "OCF 1.1 with <special>: {err}");
    let twice = doc.replace(
        "</resource-agent>",
        "  <special tag=\"again\"/>\n</resource-agent>",
    );
    assert!(
        !relaxng(&ocf11_rng(), &twice).0,
        "OCF 1.1 allows one <special> only"
    );
    let portable = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Portable);
    assert!(!portable.contains("<special"), "{portable}");
}
