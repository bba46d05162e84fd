//! `<bundle>` elements -> `BundleDef`: the implicit resources Pacemaker 2.1.5 unpacks a bundle
//! into (`pe__unpack_bundle`): per replica a container primitive (`ocf:heartbeat:docker`,
//! `podman` or `rkt`, named `<bundle>-<agent>-<N>`), an `IPaddr2` primitive when the network has
//! an `ip-range-start` (`<bundle>-ip-<addr>`), and, when there is an inner primitive, the
//! Pacemaker Remote connection `<bundle>-<N>` inside the container (its guest node), plus the
//! inner primitive cloned as `<bundle>-clone` (`<bundle>-master` when `promoted-max` is set).
//! The container's parameters (`run_opts`, `mount_points`...) are built as Pacemaker builds them,
//! since they reach the graph and the operation digests.

use std::collections::BTreeMap;

use super::{CloneDef, Element, NvSet, OpDef, Primitive, parse_interval_ms};

/// The most replicas a bundle may declare (as `clones::MAX_INSTANCES`).
pub const MAX_REPLICAS: usize = 4096;

/// Pacemaker's default Pacemaker Remote port.
const DEFAULT_REMOTE_PORT: &str = "3121";

/// One replica of a bundle: its container, IP and connection.
#[derive(Debug, Clone, Default)]
pub struct Replica {
    pub offset: usize,
    pub ipaddr: Option<String>,
    pub container: Primitive,
    pub ip: Option<Primitive>,
    /// The connection to the replica's guest node (only with an inner primitive).
    pub remote: Option<Primitive>,
}

/// A bundle as Pacemaker unpacks it.
#[derive(Debug, Clone, Default)]
pub struct BundleDef {
    pub id: String,
    pub line: usize,
    /// `docker`, `podman` or `rkt`.
    pub agent: String,
    pub image: String,
    /// The bundle's own meta attributes (inherited by every implicit resource).
    pub meta: Vec<NvSet>,
    pub replicas: Vec<Replica>,
    pub per_host: usize,
    pub promoted_max: usize,
    /// The inner primitive's clone (instances `child:N`, one per replica).
    pub child: Option<CloneDef>,
}

impl BundleDef {
    /// Every implicit primitive, in Pacemaker's child order (per replica: container, IP,
    /// connection), then the inner primitive.
    pub fn primitives(&self) -> impl Iterator<Item = &Primitive> {
        self.replicas
            .iter()
            .flat_map(|r| {
                std::iter::once(&r.container)
                    .chain(r.ip.iter())
                    .chain(r.remote.iter())
            })
            .chain(self.child.iter().map(|c| &c.child))
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// An operation as `crm_create_op_xml` writes it.
/// An operation Pacemaker creates itself for a resource it makes (a bundle's or a guest node's
/// connection, a container), with the id it gives it.
pub(super) fn implicit_op(rsc: &str, name: &str, interval: &str, timeout: Option<&str>) -> OpDef {
    let id = format!("{rsc}-{name}-interval-{interval}");
    let mut attrs: BTreeMap<String, String> = [("id", id.as_str()), ("name", name)]
        .into_iter()
        .chain(std::iter::once(("interval", interval)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(t) = timeout {
        attrs.insert("timeout".into(), t.to_string());
    }
    OpDef {
        id,
        name: name.to_string(),
        interval_ms: parse_interval_ms(interval),
        attrs,
        enabled: true,
        ..Default::default()
    }
}

fn primitive(
    id: String,
    provider: &str,
    kind: &str,
    params: Vec<(String, String)>,
    params_id: String,
    line: usize,
) -> Primitive {
    Primitive {
        ops: vec![implicit_op(&id, "monitor", "60s", None)],
        id,
        class: "ocf".into(),
        provider: Some(provider.into()),
        kind: kind.into(),
        meta: Vec::new(),
        params: vec![NvSet {
            id: params_id,
            pairs: params,
            ..Default::default()
        }],
        utilization: Vec::new(),
        line,
    }
}

/// The next address of an IPv4 range as Pacemaker counts (None past x.y.253.254 or for
/// anything else).
fn next_ip(last: &str) -> Option<String> {
    let o: Vec<u32> = last
        .split('.')
        .map(|p| p.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .ok()?;
    let [a, b, mut c, mut d] = <[u32; 4]>::try_from(o).ok()?;
    if c > 253 {
        return None;
    }
    if d > 253 {
        c += 1;
        d = 1;
    } else {
        d += 1;
    }
    Some(format!("{a}.{b}.{c}.{d}"))
}

/// A non-negative integer as `pcmk__scan_min_int` reads it (invalid: the minimum).
fn scan_min(v: Option<&str>, min: usize) -> usize {
    v.and_then(|v| v.trim().parse::<i64>().ok())
        .map(|n| (n.max(min as i64)) as usize)
        .unwrap_or(min)
}

fn sanitize_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '.'
            }
        })
        .collect()
}

struct Mount {
    source: String,
    target: String,
    options: Option<String>,
    subdir: bool,
}

/// Reads a `<bundle>`: `Err(reason)` when Pacemaker would not unpack it.
pub(super) fn parse(
    el: &Element,
    mut inner: impl FnMut(&Element) -> Option<Primitive>,
    meta_sets: impl Fn(&Element) -> Vec<NvSet>,
) -> Result<BundleDef, String> {
    let prefix = el.id().to_string();
    let (agent, xml) = ["docker", "rkt", "podman"]
        .iter()
        .find_map(|a| el.children_named(a).next().map(|x| (*a, x)))
        .ok_or_else(|| "bundle without a docker, rkt or podman element ignored".to_string())?;
    let promoted_max = scan_min(xml.attr("promoted-max").or(xml.attr("masters")), 0);
    let nreplicas = match xml.attr("replicas") {
        None if promoted_max > 0 => promoted_max,
        v => scan_min(v, 1),
    };
    if nreplicas > MAX_REPLICAS {
        return Err(format!(
            "{nreplicas} replicas is above {MAX_REPLICAS}: bundle ignored"
        ));
    }
    let mut per_host = scan_min(xml.attr("replicas-per-host"), 1);
    let command = xml.attr("run-command").map(str::to_string);
    let launcher_options = xml.attr("options").map(str::to_string);
    let image = xml.attr("image").unwrap_or("").to_string();
    let container_network = xml.attr("network").map(str::to_string);

    let net = el.children_named("network").next();
    let na = |n: &str| net.and_then(|x| x.attr(n)).map(str::to_string);
    let ip_range_start = na("ip-range-start");
    let host_netmask = na("host-netmask");
    let host_network = na("host-interface");
    let control_port = na("control-port");
    let add_host = net
        .and_then(|x| x.attr("add-host"))
        .and_then(|v| match v.to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "y" | "1" => Some(true),
            "false" | "off" | "no" | "n" | "0" => Some(false),
            _ => None,
        })
        .unwrap_or(true);
    let mut ports: Vec<(String, String)> = Vec::new();
    if let Some(net) = net {
        for p in &net.children {
            let (source, target) = match p.attr("port") {
                Some(s) => (Some(s), p.attr("internal-port")),
                None => (p.attr("range"), None),
            };
            if let Some(s) = source.filter(|s| !s.is_empty()) {
                ports.push((s.to_string(), target.unwrap_or(s).to_string()));
            }
        }
    }
    let mut mounts: Vec<Mount> = Vec::new();
    let mut need_log_mount = true;
    for m in el
        .children_named("storage")
        .take(1)
        .flat_map(|s| s.children.iter())
    {
        let (source, subdir) = match m.attr("source-dir") {
            Some(s) => (Some(s), false),
            None => (m.attr("source-dir-root"), true),
        };
        if let (Some(source), Some(target)) = (source, m.attr("target-dir")) {
            if target == "/var/log" {
                need_log_mount = false;
            }
            mounts.push(Mount {
                source: source.into(),
                target: target.into(),
                options: m.attr("options").map(str::to_string),
                subdir,
            });
        }
    }
    let valid_network = ip_range_start.is_some() || control_port.is_some();
    if control_port.is_some() && ip_range_start.is_none() && per_host > 1 {
        per_host = 1;
    }
    let meta = meta_sets(el);
    let inner_xml = el.children_named("primitive").next();
    let mut child: Option<CloneDef> = None;
    if let Some(px) = inner_xml {
        if !valid_network {
            return Err(format!(
                "cannot control {} inside {prefix} without either ip-range-start or \
                 control-port: bundle ignored",
                px.id()
            ));
        }
        let Some(p) = inner(px) else {
            return Err("the bundle's primitive cannot be used: bundle ignored".into());
        };
        let clone_id = format!(
            "{prefix}-{}",
            if promoted_max > 0 { "master" } else { "clone" }
        );
        let replicas_s = nreplicas.to_string();
        let per_host_s = per_host.to_string();
        let promoted_s = promoted_max.to_string();
        let mut generated = vec![
            ("ordered", "true"),
            ("clone-max", replicas_s.as_str()),
            ("clone-node-max", per_host_s.as_str()),
            (
                "globally-unique",
                if per_host > 1 { "true" } else { "false" },
            ),
        ];
        if promoted_max > 0 {
            generated.push(("promotable", "true"));
            generated.push(("promoted-max", promoted_s.as_str()));
        }
        let mut cmeta = vec![NvSet {
            id: format!("{prefix}-clone-meta"),
            pairs: pairs(&generated),
            ..Default::default()
        }];
        cmeta.extend(meta.iter().cloned());
        child = Some(CloneDef {
            id: clone_id,
            meta: cmeta,
            child: p,
            group: None,
            line: px.line,
            legacy_master: false,
        });
        mounts.push(Mount {
            source: "/etc/pacemaker/authkey".into(),
            target: "/etc/pacemaker/authkey".into(),
            options: None,
            subdir: false,
        });
        if need_log_mount {
            mounts.push(Mount {
                source: "/var/log/pacemaker/bundles".into(),
                target: "/var/log".into(),
                options: None,
                subdir: true,
            });
        }
        ports.push((
            control_port.clone().unwrap_or(DEFAULT_REMOTE_PORT.into()),
            control_port.clone().unwrap_or(DEFAULT_REMOTE_PORT.into()),
        ));
    }

    // Addresses, and the host entries every container gets.
    let mut ipaddrs: Vec<Option<String>> = Vec::new();
    let mut host_opts = String::new();
    let mut last: Option<String> = None;
    for n in 0..nreplicas {
        let addr = match (&ip_range_start, &last) {
            (None, _) => None,
            (Some(_), Some(l)) => next_ip(l),
            (Some(s), None) => Some(s.clone()),
        };
        if ip_range_start.is_some() {
            last = addr.clone();
        }
        if let Some(a) = &addr {
            if agent != "rkt" && add_host {
                host_opts.push_str(&format!(" --add-host={prefix}-{n}:{a}"));
            } else {
                host_opts.push_str(&format!(" --hosts-entry={a}={prefix}-{n}"));
            }
        }
        ipaddrs.push(addr);
    }

    let mut replicas = Vec::new();
    for (n, ipaddr) in ipaddrs.into_iter().enumerate() {
        let docker_like = agent != "rkt";
        let (hostname_opt, env_opt) = if docker_like {
            ("-h ", "-e ")
        } else {
            ("--hostname=", "--environment=")
        };
        let mut run = String::new();
        if agent == "docker" {
            run.push_str(" --restart=no");
        }
        if ip_range_start.is_some() {
            run.push_str(&format!(" {hostname_opt}{prefix}-{n}"));
        }
        run.push_str(&format!(" {env_opt}PCMK_stderr=1"));
        if let Some(net) = &container_network {
            run.push_str(&format!(" --net={net}"));
        }
        run.push_str(&format!(
            " {env_opt}PCMK_remote_port={}",
            control_port.as_deref().unwrap_or(DEFAULT_REMOTE_PORT)
        ));
        let mut mount_points: Vec<String> = Vec::new();
        for (vol, m) in mounts.iter().enumerate() {
            let source = if m.subdir {
                let s = format!("{}/{prefix}-{n}", m.source);
                mount_points.push(s.clone());
                s
            } else {
                m.source.clone()
            };
            if docker_like {
                run.push_str(&format!(" -v {source}:{}", m.target));
                if let Some(o) = &m.options {
                    run.push_str(&format!(":{o}"));
                }
            } else {
                let o = m
                    .options
                    .as_deref()
                    .map(|o| format!(",{o}"))
                    .unwrap_or_default();
                run.push_str(&format!(
                    " --volume vol{vol},kind=host,source={source}{o} --mount volume=vol{vol},target={}",
                    m.target
                ));
            }
        }
        for (source, target) in &ports {
            if docker_like {
                if let Some(a) = &ipaddr {
                    run.push_str(&format!(" -p {a}:{source}:{target}"));
                } else if container_network.as_deref() != Some("host") {
                    run.push_str(&format!(" -p {source}:{target}"));
                }
            } else if let Some(a) = &ipaddr {
                run.push_str(&format!(" --port={target}:{a}:{source}"));
            } else {
                run.push_str(&format!(" --port={target}:{source}"));
            }
        }
        if let Some(o) = &launcher_options {
            run.push_str(&format!(" {o}"));
        }
        run.push(' ');
        run.push_str(&host_opts);
        let mut params = pairs(&[
            ("image", image.as_str()),
            ("allow_pull", "true"),
            ("force_kill", "false"),
            ("reuse", "false"),
            ("run_opts", run.as_str()),
        ]);
        params.push(("mount_points".into(), mount_points.join(",")));
        if child.is_some() {
            params.push((
                "run_cmd".into(),
                command
                    .clone()
                    .unwrap_or_else(|| "/usr/sbin/pacemaker-remoted".into()),
            ));
        } else if let Some(c) = &command {
            params.push(("run_cmd".into(), c.clone()));
        }
        params.push(("monitor_cmd".into(), "/bin/true".into()));
        let container = primitive(
            sanitize_id(&format!("{prefix}-{agent}-{n}")),
            "heartbeat",
            agent,
            params,
            format!("{prefix}-attributes-{n}"),
            el.line,
        );
        let ip = ipaddr.as_ref().map(|a| {
            let mut params = pairs(&[("ip", a.as_str())]);
            if let Some(nic) = &host_network {
                params.push(("nic".into(), nic.clone()));
            }
            params.push((
                "cidr_netmask".into(),
                host_netmask.clone().unwrap_or_else(|| "32".into()),
            ));
            primitive(
                sanitize_id(&format!("{prefix}-ip-{a}")),
                "heartbeat",
                "IPaddr2",
                params,
                format!("{prefix}-attributes-{n}"),
                el.line,
            )
        });
        let remote = child.as_ref().map(|c| {
            let id = format!("{prefix}-{n}");
            let _ = c;
            let server = ipaddr.clone().unwrap_or_else(|| "#uname".into());
            let port = control_port
                .clone()
                .unwrap_or_else(|| DEFAULT_REMOTE_PORT.into());
            Primitive {
                ops: vec![implicit_op(&id, "monitor", "30s", Some("30s"))],
                meta: vec![NvSet {
                    id: format!("{id}-meta_attributes"),
                    pairs: pairs(&[("internal_rsc", "true"), ("container", &container.id)]),
                    ..Default::default()
                }],
                params: vec![NvSet {
                    id: format!("{id}-instance_attributes"),
                    pairs: pairs(&[("addr", server.as_str()), ("port", port.as_str())]),
                    ..Default::default()
                }],
                id,
                class: "ocf".into(),
                provider: Some("pacemaker".into()),
                kind: "remote".into(),
                utilization: Vec::new(),
                line: el.line,
            }
        });
        replicas.push(Replica {
            offset: n,
            ipaddr,
            container,
            ip,
            remote,
        });
    }
    // The inner primitive's utilization belongs to the containers; its address is a meta
    // attribute of each instance (`external-ip`, set per instance by `crate::bundles`).
    if let Some(c) = child.as_mut() {
        let util = std::mem::take(&mut c.child.utilization);
        for r in &mut replicas {
            r.container.utilization = util.clone();
        }
    }
    Ok(BundleDef {
        id: prefix,
        line: el.line,
        agent: agent.to_string(),
        image,
        meta,
        replicas,
        per_host,
        promoted_max,
        child,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_count_as_pacemaker_counts() {
        assert_eq!(
            next_ip("192.168.122.131").as_deref(),
            Some("192.168.122.132")
        );
        assert_eq!(next_ip("10.0.1.254").as_deref(), Some("10.0.2.1"));
        assert_eq!(next_ip("10.0.254.1"), None);
        assert_eq!(next_ip("fe80::1"), None);
    }
}
