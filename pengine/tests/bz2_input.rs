//! `pengine simulate -x` reads the scheduler's saved inputs (`pe-input-N.bz2`, bzip2) as
//! crm_simulate does: the same output as for the plain file.

use std::path::Path;
use std::process::Command;

const PENGINE: &str = env!("CARGO_BIN_EXE_pengine");

fn simulate(input: &Path) -> String {
    let out = Command::new(PENGINE)
        .args(["simulate", "-S", "-x"])
        .arg(input)
        .output()
        .expect("run pengine");
    assert!(
        out.status.success(),
        "pengine simulate -x {}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn a_bzip2_input_reads_as_the_plain_file() {
    let cib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cibs/sample-cluster.xml");
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("pe-input-0");
    std::fs::copy(&cib, &plain).expect("copy");
    let status = Command::new("bzip2")
        .arg("-k")
        .arg(&plain)
        .status()
        .expect("bzip2");
    assert!(status.success());
    let packed = dir.path().join("pe-input-0.bz2");
    assert!(std::fs::read(&packed).unwrap().starts_with(b"BZh"));
    let want = simulate(&plain);
    assert!(want.contains("Transition Summary"), "{want}");
    assert_eq!(simulate(&packed), want);
}
