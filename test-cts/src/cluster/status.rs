//! `crm_mon --output-as=xml` read into what the tests ask: the DC, each node's membership and
//! each resource's role and location.

use std::collections::BTreeMap;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// One node as crm_mon reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub name: String,
    pub online: bool,
    pub unclean: bool,
    pub shutdown: bool,
}

/// One primitive resource as crm_mon reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceStatus {
    pub id: String,
    pub agent: String,
    pub role: String,
    pub failed: bool,
    /// Nodes it is active on, sorted.
    pub nodes: Vec<String>,
}

/// The cluster as one crm_mon call saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterStatus {
    pub dc: Option<String>,
    pub with_quorum: bool,
    pub nodes: BTreeMap<String, NodeStatus>,
    pub resources: BTreeMap<String, ResourceStatus>,
}

impl ClusterStatus {
    /// Reads crm_mon's XML; `None` when it is not crm_mon XML at all.
    pub fn parse(xml: &str) -> Option<ClusterStatus> {
        let mut reader = Reader::from_str(xml);
        let mut status = ClusterStatus::default();
        let mut seen_root = false;
        let mut section: Vec<String> = Vec::new();
        let mut current: Option<ResourceStatus> = None;
        loop {
            let (e, empty) = match reader.read_event() {
                Ok(Event::Start(e)) => (e, false),
                Ok(Event::Empty(e)) => (e, true),
                Ok(Event::End(e)) => {
                    let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                    if name == "resource" {
                        if let Some(mut r) = current.take() {
                            r.nodes.sort();
                            status.resources.insert(r.id.clone(), r);
                        }
                    }
                    section.pop();
                    continue;
                }
                Ok(Event::Eof) => break,
                Err(_) => return None,
                Ok(_) => continue,
            };
            let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
            let attrs = attributes(&e);
            let get = |k: &str| attrs.get(k).cloned().unwrap_or_default();
            let in_section = |s: &str| section.iter().any(|x| x == s);
            match name.as_str() {
                "pacemaker-result" | "crm_mon" => seen_root = true,
                "current_dc" if get("present") == "true" => {
                    status.dc = Some(get("name"));
                    status.with_quorum = get("with_quorum") == "true";
                }
                "node" if current.is_some() => {
                    if let Some(r) = current.as_mut() {
                        r.nodes.push(get("name"));
                    }
                }
                "node" if in_section("nodes") => {
                    status.nodes.insert(
                        get("name"),
                        NodeStatus {
                            name: get("name"),
                            online: get("online") == "true",
                            unclean: get("unclean") == "true",
                            shutdown: get("shutdown") == "true",
                        },
                    );
                }
                "resource" if in_section("resources") => {
                    let r = ResourceStatus {
                        id: get("id"),
                        agent: get("resource_agent"),
                        role: get("role"),
                        failed: get("failed") == "true",
                        nodes: Vec::new(),
                    };
                    if empty {
                        status.resources.insert(r.id.clone(), r);
                    } else {
                        current = Some(r);
                    }
                }
                _ => {}
            }
            if !empty {
                section.push(name);
            }
        }
        seen_root.then_some(status)
    }

    /// Names of the nodes that are online, sorted.
    pub fn online_nodes(&self) -> Vec<String> {
        self.nodes
            .values()
            .filter(|n| n.online)
            .map(|n| n.name.clone())
            .collect()
    }

    /// Where `resource` is active (empty when stopped or unknown).
    pub fn locations(&self, resource: &str) -> Vec<String> {
        self.resources
            .get(resource)
            .map(|r| r.nodes.clone())
            .unwrap_or_default()
    }

    /// Whether `resource` is started (not failed) on exactly `node` and nowhere else.
    pub fn started_only_on(&self, resource: &str, node: &str) -> bool {
        self.resources
            .get(resource)
            .is_some_and(|r| r.role == "Started" && !r.failed && r.nodes == [node])
    }
}

fn attributes(e: &BytesStart<'_>) -> BTreeMap<String, String> {
    e.attributes()
        .filter_map(|a| a.ok())
        .map(|a| {
            (
                String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                a.unescape_value()
                    .map(|v| v.into_owned())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"<pacemaker-result api-version="2.25" request="crm_mon -1 --output-as=xml">
  <summary>
    <stack type="corosync"/>
    <current_dc present="true" version="2.1.5" name="node2" id="2" with_quorum="true"/>
  </summary>
  <nodes>
    <node name="node1" id="1" online="true" standby="false" unclean="false" shutdown="false" type="member"/>
    <node name="node2" id="2" online="false" standby="false" unclean="true" shutdown="false" type="member"/>
  </nodes>
  <resources>
    <resource id="fence-highlander" resource_agent="stonith:fence_highlander" role="Started" active="true" failed="false" nodes_running_on="1">
      <node name="node1" id="1" cached="true"/>
    </resource>
    <resource id="vm1" resource_agent="ocf:heartbeat:VirtualDomain" role="Stopped" active="false" failed="false" nodes_running_on="0"/>
  </resources>
  <node_history><node name="node1"><resource_history id="vm1"/></node></node_history>
  <status code="0" message="OK"/>
</pacemaker-result>"#;

    #[test]
    fn reads_dc_nodes_and_resources() {
        let s = ClusterStatus::parse(SAMPLE).expect("crm_mon xml");
        assert_eq!(s.dc.as_deref(), Some("node2"));
        assert!(s.with_quorum);
        assert_eq!(s.online_nodes(), ["node1"]);
        assert!(s.nodes["node2"].unclean);
        assert!(s.started_only_on("fence-highlander", "node1"));
        assert_eq!(s.resources["vm1"].role, "Stopped");
        assert!(s.locations("vm1").is_empty());
        // node_history's <node> must not be taken for a member node.
        assert_eq!(s.nodes.len(), 2);
    }

    #[test]
    fn garbage_is_not_a_status() {
        assert_eq!(ClusterStatus::parse("crm_mon: Connection refused"), None);
        assert_eq!(ClusterStatus::parse("<a><b></a>"), None);
    }
}
