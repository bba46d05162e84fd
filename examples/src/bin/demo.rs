//! The README's main job: show Highlander working on its embedded default.
//!
//! Today: the VirtualDomain agent's meta-data for both audiences and its parameter table, rendered
//! from the one table the agent validates with. Later issues grow this into a planned sample
//! cluster and a live two-node demo.

use highlander_agent::params::VIRTUAL_DOMAIN;
use ocf_metadata::{Action, MetadataProfile, OcfEnv, render_markdown, render_metadata};

fn main() {
    println!("== Highlander demo: ocf:highlander:VirtualDomain\n");
    let portable = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Portable);
    let full = render_metadata(&VIRTUAL_DOMAIN, MetadataProfile::Ocf11);
    println!(
        "meta-data: {} bytes for ocf-tester (DTD-valid), {} bytes for Pacemaker (OCF 1.1, reload-agent)",
        portable.len(),
        full.len()
    );
    let env = OcfEnv::from_pairs([("OCF_RESKEY_CRM_meta_interval", "0")]).unwrap_or_default();
    println!(
        "a monitor with interval 0 is a probe: {}\n",
        env.is_probe(Action::Monitor)
    );
    print!("{}", render_markdown(&VIRTUAL_DOMAIN));
}
