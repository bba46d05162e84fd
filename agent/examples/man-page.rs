//! Prints the agent's man page, `ocf_highlander_VirtualDomain(7)`, from the same parameter table
//! as its meta-data: `cargo run -p highlander-agent --example man-page -- VERSION DATE`
//! (the Debian package build, tools/deb.sh, runs it).

use highlander_agent::params::VIRTUAL_DOMAIN;
use ocf_metadata::{ManPage, render_man_page};

fn main() {
    let mut args = std::env::args().skip(1);
    let version = args
        .next()
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string());
    let date = args.next().unwrap_or_default();
    let source = format!("highlander {version}");
    print!(
        "{}",
        render_man_page(
            &VIRTUAL_DOMAIN,
            ManPage {
                provider: "highlander",
                source: &source,
                date: &date,
            },
        )
    );
}
