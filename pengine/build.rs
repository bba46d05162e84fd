//! Build script: the commit the `pengine` binary is built from, for `pengine --version`
//! (`HIGHLANDER_COMMIT` from the environment wins, for builds outside a git checkout).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=HIGHLANDER_COMMIT");
    // A new commit moves HEAD or the branch it points at (loose or packed).
    for path in ["HEAD", "packed-refs"]
        .iter()
        .filter_map(|p| git(&["rev-parse", "--git-path", p]))
        .chain(
            git(&["symbolic-ref", "-q", "HEAD"])
                .and_then(|r| git(&["rev-parse", "--git-path", &r])),
        )
    {
        let absolute = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&path);
        println!("cargo:rerun-if-changed={}", absolute.display());
    }
    let commit = std::env::var("HIGHLANDER_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "commit unknown".to_string());
    println!("cargo:rustc-env=HIGHLANDER_COMMIT={commit}");
}
