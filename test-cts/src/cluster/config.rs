//! The configuration files a test cluster is born with: corosync.conf, the pre-seeded CIB,
//! libvirtd.conf and qemu.conf per node, the shared /etc/hosts and the tiny guest's domain XML.
//!
//! All are plain text built from the node list; nothing here touches the system.

use std::fmt::Write as _;

/// Corosync's cluster name for every test cluster (each lives in its own netns, so no clash).
pub const CLUSTER_NAME: &str = "highlander";

/// The private subnet of every test cluster: node N is `10.77.0.N`.
pub fn node_addr(index: usize) -> String {
    format!("10.77.0.{index}")
}

/// Node N's name, as corosync, Pacemaker and /etc/hosts know it.
pub fn node_name(index: usize) -> String {
    format!("node{index}")
}

/// corosync.conf: knet over the private bridge, short token, `two_node` for two nodes and
/// `wait_for_all` always, so no node becomes quorate (and fences its peers) alone at start-up.
pub fn corosync_conf(node_count: usize) -> String {
    let mut nodes = String::new();
    for i in 1..=node_count {
        let _ = write!(
            nodes,
            "    node {{\n        name: {}\n        nodeid: {i}\n        ring0_addr: {}\n    }}\n",
            node_name(i),
            node_addr(i)
        );
    }
    let two_node = if node_count == 2 {
        "    two_node: 1\n"
    } else {
        ""
    };
    format!(
        "totem {{\n    version: 2\n    cluster_name: {CLUSTER_NAME}\n    transport: knet\n    \
         crypto_cipher: none\n    crypto_hash: none\n    token: 1000\n    join: 50\n}}\n\
         logging {{\n    to_stderr: no\n    to_logfile: yes\n    \
         logfile: /var/log/corosync/corosync.log\n    to_syslog: no\n    timestamp: on\n}}\n\
         quorum {{\n    provider: corosync_votequorum\n{two_node}    wait_for_all: 1\n}}\n\
         nodelist {{\n{nodes}}}\n"
    )
}

/// The CIB every node starts from: fencing on with one `fence_highlander` device able to fence
/// every node, a 2 s `dc-deadtime` (the default 20 s dominates start-up), and a resource
/// stickiness so a resource stays where it is once a move's constraint is cleared.
pub fn cib_xml(node_count: usize, fence_state_dir: &str) -> String {
    let hosts: Vec<String> = (1..=node_count).map(node_name).collect();
    let hosts = hosts.join(" ");
    format!(
        r#"<cib crm_feature_set="3.16.1" validate-with="pacemaker-3.9" epoch="1" num_updates="0" admin_epoch="0">
  <configuration>
    <crm_config>
      <cluster_property_set id="cib-bootstrap-options">
        <nvpair id="opt-stonith-enabled" name="stonith-enabled" value="true"/>
        <nvpair id="opt-stonith-timeout" name="stonith-timeout" value="30s"/>
        <nvpair id="opt-dc-deadtime" name="dc-deadtime" value="2s"/>
        <nvpair id="opt-recheck" name="cluster-recheck-interval" value="1min"/>
      </cluster_property_set>
    </crm_config>
    <nodes/>
    <resources>
      <primitive id="fence-highlander" class="stonith" type="fence_highlander">
        <instance_attributes id="fence-highlander-params">
          <nvpair id="fence-highlander-state-dir" name="state_dir" value="{fence_state_dir}"/>
          <nvpair id="fence-highlander-host-list" name="pcmk_host_list" value="{hosts}"/>
        </instance_attributes>
        <operations>
          <op id="fence-highlander-monitor" name="monitor" interval="60s"/>
        </operations>
      </primitive>
    </resources>
    <constraints/>
    <rsc_defaults>
      <meta_attributes id="rsc-defaults">
        <nvpair id="rsc-defaults-stickiness" name="resource-stickiness" value="100"/>
      </meta_attributes>
    </rsc_defaults>
  </configuration>
  <status/>
</cib>
"#
    )
}

/// /etc/hosts for every node: VirtualDomain dials `qemu+tcp://<target node name>/system`.
pub fn hosts(node_count: usize) -> String {
    let mut out = String::from("127.0.0.1 localhost\n");
    for i in 1..=node_count {
        let _ = writeln!(out, "{} {}", node_addr(i), node_name(i));
    }
    out
}

/// libvirtd.conf: sockets in the node's private /run, TCP without auth on the node's address
/// only, and a distinct host UUID (libvirt refuses to migrate between equal UUIDs).
pub fn libvirtd_conf(index: usize) -> String {
    format!(
        "unix_sock_dir = \"/run/libvirt\"\nunix_sock_rw_perms = \"0700\"\n\
         auth_unix_ro = \"none\"\nauth_unix_rw = \"none\"\nlisten_tls = 0\nlisten_tcp = 1\n\
         listen_addr = \"{addr}\"\nauth_tcp = \"none\"\n\
         host_uuid = \"00000000-0000-4000-8000-{index:012}\"\n\
         log_outputs = \"3:file:/var/log/libvirt/libvirtd.log\"\n",
        addr = node_addr(index)
    )
}

/// qemu.conf: no systemd, dbus, AppArmor, cgroups or virtlogd here; the migration stream
/// listens on, and is advertised as, the node's own address.
pub fn qemu_conf(index: usize) -> String {
    format!(
        "user = \"root\"\ngroup = \"root\"\ndynamic_ownership = 0\nremember_owner = 0\n\
         security_driver = \"none\"\ncgroup_controllers = [ ]\nnamespaces = [ ]\n\
         stdio_handler = \"file\"\nmigration_address = \"{addr}\"\nmigration_host = \"{addr}\"\n",
        addr = node_addr(index)
    )
}

/// A diskless TCG guest with 32 MiB: SeaBIOS idles, migration moves about 0.5 MiB.
pub fn tiny_domain_xml(name: &str) -> String {
    format!(
        "<domain type='qemu'>\n  <name>{name}</name>\n  <memory unit='MiB'>32</memory>\n  \
         <vcpu>1</vcpu>\n  <os><type arch='x86_64' machine='pc'>hvm</type></os>\n  <devices>\n    \
         <emulator>/usr/bin/qemu-system-x86_64</emulator>\n    <serial type='pty'/>\n    \
         <console type='pty'/>\n    <memballoon model='none'/>\n  </devices>\n</domain>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_nodes_get_two_node_quorum_and_three_do_not() {
        let two = corosync_conf(2);
        assert!(two.contains("two_node: 1"));
        assert!(two.contains("ring0_addr: 10.77.0.2"));
        let three = corosync_conf(3);
        assert!(!three.contains("two_node"));
        assert!(three.contains("name: node3"));
        assert!(three.contains("wait_for_all: 1"));
    }

    #[test]
    fn cib_fences_every_node_and_host_uuids_differ() {
        let cib = cib_xml(3, "/tmp/x/fence");
        assert!(cib.contains(r#"name="pcmk_host_list" value="node1 node2 node3""#));
        assert!(cib.contains(r#"name="stonith-enabled" value="true""#));
        assert_ne!(libvirtd_conf(1), libvirtd_conf(2));
        assert!(libvirtd_conf(2).contains("00000000-0000-4000-8000-000000000002"));
    }
}
