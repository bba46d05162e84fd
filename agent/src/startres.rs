//! `start_resources`, as heartbeat's agent does it: before a start, and before a live migration on
//! the target, every storage pool and virtual network the domain XML names (any `pool='...'` or
//! `network='...'` attribute, as heartbeat's pattern finds them; here read with an XML parser) is
//! started when inactive; an active pool is refreshed. A pool or network that cannot be started
//! fails the action (1) with a reason naming it. Each call gets at most half the time left.

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::actions::Ctx;
use crate::clock::Deadline;
use crate::hypervisor::Hypervisor;

/// The pools and networks a domain XML names, each sorted and without repeats.
pub fn referenced(xml: &str) -> (Vec<String>, Vec<String>) {
    let mut pools = Vec::new();
    let mut networks = Vec::new();
    let mut reader = Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => {
                for a in e.attributes().flatten() {
                    let list = match a.key.as_ref() {
                        b"pool" => &mut pools,
                        b"network" => &mut networks,
                        _ => continue,
                    };
                    if let Ok(v) = a.unescape_value() {
                        let v = v.trim();
                        if !v.is_empty() {
                            list.push(v.to_owned());
                        }
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    for list in [&mut pools, &mut networks] {
        list.sort();
        list.dedup();
    }
    (pools, networks)
}

/// Starts what `xml` names on `hv` (the local hypervisor for a start, the target's for a
/// migration); `Err` names what could not be started.
pub fn start_all(
    ctx: &Ctx,
    hv: &dyn Hypervisor,
    xml: &str,
    deadline: Deadline,
) -> Result<(), String> {
    let (pools, networks) = referenced(xml);
    for pool in &pools {
        let budget = deadline.remaining_ms(ctx.clock) / 2;
        match hv.ensure_pool(pool, budget) {
            Ok(true) => ctx
                .log
                .info(&format!("started storage pool {pool} on {}", hv.uri())),
            Ok(false) => ctx.log.debug(&format!("storage pool {pool} refreshed")),
            Err(e) => {
                return Err(format!("failed to start required storage pool {pool}: {e}"));
            }
        }
    }
    for net in &networks {
        let budget = deadline.remaining_ms(ctx.clock) / 2;
        match hv.ensure_network(net, budget) {
            Ok(true) => ctx
                .log
                .info(&format!("started virtual network {net} on {}", hv.uri())),
            Ok(false) => ctx.log.debug(&format!("virtual network {net} is active")),
            Err(e) => {
                return Err(format!(
                    "failed to start required virtual network {net}: {e}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_pool_and_network_attribute() {
        let xml = "<domain><name>a</name><devices>\
            <disk type='volume'><source pool='p2' volume='v'/></disk>\
            <disk type='volume'><source pool='p1' volume='w'/></disk>\
            <disk type='volume'><source pool='p2' volume='x'/></disk>\
            <interface type='network'><source network='net&amp;1'/></interface>\
            <interface type='network'><source network=''/></interface>\
            </devices></domain>";
        assert_eq!(
            referenced(xml),
            (vec!["p1".into(), "p2".into()], vec!["net&1".into()])
        );
        assert_eq!(referenced("<domain/>"), (vec![], vec![]));
        assert_eq!(referenced("<domain><x pool='a'"), (vec![], vec![]));
    }
}
