//! Operation parameter digests: the MD5 of the canonical XML of an operation's parameters, as
//! Pacemaker 2.1.5 records them in `lrm_rsc_op` (`op-digest`, `op-restart-digest`,
//! `op-secure-digest`), and the comparison that tells whether a resource's definition changed.
//!
//! Facts (Pacemaker 2.1.5, lib/pengine/pe_digest.c, lib/common/digest.c, lib/common/xml.c):
//! - the "all" parameters are the resource's instance attributes (evaluated for the node), then
//!   the operation's own instance attributes (first value of a name wins), then the operation's
//!   meta-attributes as `CRM_meta_*`; every `CRM_meta_*` is dropped again except
//!   `CRM_meta_timeout` of a recurring operation, and so are `id`, `crm_feature_set`,
//!   `op-digest`, `on_node`, `on_node_uuid` and `pcmk_external_ip`;
//! - the text digested is `" <parameters"`, each attribute sorted by name as ` name="value"`
//!   (value XML-escaped), `"/>"` and a newline; the digest is its MD5 in lowercase hex;
//! - the restart digest keeps only the names of the entry's `op-force-restart` list (all of
//!   them without a list); the secure digest drops those of its `op-secure-params` list (and,
//!   for entries recorded before feature set 3.16.0, the operation's extra parameters and the
//!   timeout, and a fencing device's Pacemaker-defined parameters).

use std::collections::BTreeMap;

/// What comparing a history entry's digests with the configuration found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestCheck {
    /// The recorded digests are those of the configured parameters.
    Match,
    /// A parameter that needs a restart changed (or a start with extra parameters changed).
    Restart,
    /// Some parameter changed: a reload can apply it (or a recurring operation is rescheduled).
    All,
    /// The entry records no digest.
    Unknown,
}

/// The parameters one operation runs with, as Pacemaker would pass them.
#[derive(Debug, Clone, Default)]
pub struct OpParams {
    /// The resource's instance attributes, evaluated for the node.
    pub params: BTreeMap<String, String>,
    /// The operation's own instance attributes.
    pub extra: BTreeMap<String, String>,
    pub interval_ms: u64,
    pub timeout_ms: u64,
    /// A fencing device (its Pacemaker-defined parameters are left out of old secure digests).
    pub fencing: bool,
}

/// The digests computed for one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digests {
    pub all: String,
    pub secure: String,
    /// Only when the entry records a restart digest to compare with.
    pub restart: Option<String>,
}

/// Names never part of an operation digest.
fn filtered(name: &str) -> bool {
    name.starts_with("CRM_meta_")
        || matches!(
            name,
            "id" | "crm_feature_set"
                | "op-digest"
                | "on_node"
                | "on_node_uuid"
                | "pcmk_external_ip"
        )
}

/// True when `name` is one of the space-separated names of `list` (Pacemaker pads each name
/// with spaces and searches the list, which it records with a space on both ends).
fn listed(list: &str, name: &str) -> bool {
    list.contains(&format!(" {name} "))
}

/// Pacemaker-defined parameters of fencing devices (`pcmk_*` of the fencer's own table).
fn fence_param(name: &str) -> bool {
    matches!(
        name,
        "pcmk_host_argument"
            | "pcmk_host_check"
            | "pcmk_host_list"
            | "pcmk_host_map"
            | "pcmk_delay_base"
            | "pcmk_delay_max"
            | "pcmk_action_limit"
    ) || [
        "pcmk_reboot_",
        "pcmk_off_",
        "pcmk_on_",
        "pcmk_list_",
        "pcmk_monitor_",
        "pcmk_status_",
    ]
    .iter()
    .any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| matches!(rest, "action" | "timeout" | "retries"))
    })
}

/// Compares two dotted version strings numerically (missing parts count as 0).
pub(crate) fn version_less(a: &str, b: &str) -> bool {
    let parts = |s: &str| -> Vec<u64> {
        s.split('.')
            .map(|p| p.trim().parse::<u64>().unwrap_or(0))
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    let n = a.len().max(b.len());
    for i in 0..n {
        let (x, y) = (
            a.get(i).copied().unwrap_or(0),
            b.get(i).copied().unwrap_or(0),
        );
        if x != y {
            return x < y;
        }
    }
    false
}

/// The parameters of the "all" digest, already filtered.
pub fn all_params(op: &OpParams) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in op.params.iter().chain(op.extra.iter()) {
        if !filtered(k) {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if op.interval_ms > 0 {
        out.insert("CRM_meta_timeout".into(), op.timeout_ms.to_string());
    }
    out
}

/// Computes the digests of `op` for a history entry with these attributes (`op-force-restart`,
/// `op-secure-params`, `op-restart-digest`, `crm_feature_set`); `cib_feature_set` is the CIB's,
/// used when the entry has none.
pub fn digests(op: &OpParams, entry: &crate::cib::Element, cib_feature_set: &str) -> Digests {
    let all = all_params(op);
    Digests {
        all: md5_hex(params_text(&all).as_bytes()),
        secure: secure_digest(op, &all, entry, cib_feature_set),
        restart: restart_digest(&all, entry),
    }
}

/// A fencing device's digests for unfencing (all parameters, non-secret ones): computed for an
/// action without history, so the secret parameters are Pacemaker's default list ("passwd",
/// "password", "user") and the version is the CIB's feature set.
pub fn unfencing_digests(op: &OpParams, cib_feature_set: &str) -> (String, String) {
    let entry = crate::cib::Element {
        attrs: vec![(
            "op-secure-params".to_string(),
            " passwd password user ".to_string(),
        )],
        ..Default::default()
    };
    let d = digests(op, &entry, cib_feature_set);
    (d.all, d.secure)
}

/// The secure digest: the parameters without the entry's `op-secure-params` (before feature set
/// 3.16.0: the configured parameters only, a fencing device's without its fencing ones).
fn secure_digest(
    op: &OpParams,
    all: &BTreeMap<String, String>,
    entry: &crate::cib::Element,
    cib_feature_set: &str,
) -> String {
    let version = entry.attr("crm_feature_set").unwrap_or(cib_feature_set);
    let old = version_less(version, "3.16.0");
    let mut secure: BTreeMap<String, String> = if old {
        op.params
            .iter()
            .filter(|(k, _)| !filtered(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    } else {
        all.iter()
            .filter(|(k, _)| !filtered(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    if let Some(list) = entry.attr("op-secure-params") {
        secure.retain(|k, _| !listed(list, k));
    }
    if old && op.fencing {
        secure.retain(|k, _| !fence_param(k));
    }
    md5_hex(params_text(&secure).as_bytes())
}

/// The restart digest, when the entry records one: `all` kept to the entry's
/// `op-force-restart` list.
fn restart_digest(all: &BTreeMap<String, String>, entry: &crate::cib::Element) -> Option<String> {
    entry.attr("op-restart-digest").map(|_| {
        let mut kept = all.clone();
        if let Some(list) = entry.attr("op-force-restart") {
            kept.retain(|k, _| listed(list, k));
        }
        md5_hex(params_text(&kept).as_bytes())
    })
}

/// Compares a history entry with the configured parameters, as Pacemaker does when it checks an
/// active resource's history for definition changes. `sanitized`: only parameters masked by
/// the secure list changed is no change (a simulation's view, as crm_simulate on a file).
pub fn check(
    op: &OpParams,
    entry: &crate::cib::Element,
    cib_feature_set: &str,
    sanitized: bool,
) -> DigestCheck {
    // The secure digest is computed only when a mismatch asks for it.
    let all = all_params(op);
    let all_digest = md5_hex(params_text(&all).as_bytes());
    let recorded_all = entry.attr("op-digest");
    let recorded_restart = entry.attr("op-restart-digest");
    let result = match (recorded_restart, restart_digest(&all, entry)) {
        (Some(rec), Some(calc)) if rec != calc => DigestCheck::Restart,
        _ => match recorded_all {
            None => DigestCheck::Unknown,
            Some(rec) if rec != all_digest => {
                if op.interval_ms == 0 && !op.extra.is_empty() {
                    DigestCheck::Restart
                } else {
                    DigestCheck::All
                }
            }
            Some(_) => DigestCheck::Match,
        },
    };
    if sanitized
        && result != DigestCheck::Match
        && entry
            .attr("op-secure-digest")
            .is_some_and(|rec| rec == secure_digest(op, &all, entry, cib_feature_set))
    {
        return DigestCheck::Match;
    }
    result
}

/// The canonical text Pacemaker digests for a parameter set.
pub fn params_text(params: &BTreeMap<String, String>) -> String {
    let mut out = String::from(" <parameters");
    for (k, v) in params {
        out.push(' ');
        out.push_str(k);
        out.push_str("=\"");
        out.push_str(&escape(v));
        out.push('"');
    }
    out.push_str("/>\n");
    out
}

/// Pacemaker's attribute escaping for digests: the five XML entities, a tab as four spaces,
/// newline and carriage return as `\n` and `\r`, other non-printing bytes as a backslash and
/// three octal digits. Like Pacemaker, it stops escaping at the first pair of bytes with the
/// high bit set (a multi-byte UTF-8 character) and copies the rest as it is.
fn escape(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b & 0x80 != 0 && bytes.get(i + 1).is_some_and(|n| n & 0x80 != 0) {
            out.extend_from_slice(&bytes[i..]);
            break;
        }
        match b {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&apos;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'\t' => out.extend_from_slice(b"    "),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            // A signed char in C: bytes from 0x80 print as a negative number in octal.
            0x80..=0xff => {
                let n = b as i8 as i32 as u32;
                out.extend_from_slice(format!("\\{n:03o}").as_bytes());
            }
            b if !(b' '..=b'~').contains(&b) => {
                out.extend_from_slice(format!("\\{b:03o}").as_bytes());
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// MD5 (RFC 1321) of `data`, as 32 lowercase hex digits.
pub fn md5_hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for b in md5(data) {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0xf)] as char);
    }
    out
}

/// MD5 (RFC 1321) of `data`.
pub fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    // K[i] = floor(abs(sin(i + 1)) * 2^32), the RFC's table, computed once.
    static K: std::sync::OnceLock<[u32; 64]> = std::sync::OnceLock::new();
    let k = K.get_or_init(|| {
        std::array::from_fn(|i| (((i as f64) + 1.0).sin().abs() * 4_294_967_296.0) as u32)
    });
    let mut state: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut message = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_len.to_le_bytes());
    for chunk in message.chunks_exact(64) {
        let m: [u32; 16] = std::array::from_fn(|i| {
            u32::from_le_bytes([
                chunk[4 * i],
                chunk[4 * i + 1],
                chunk[4 * i + 2],
                chunk[4 * i + 3],
            ])
        });
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let rotated = a
                .wrapping_add(f)
                .wrapping_add(k[i])
                .wrapping_add(m[g])
                .rotate_left(S[i]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(rotated);
        }
        state[0] = state[0].wrapping_add(a);
        state[1] = state[1].wrapping_add(b);
        state[2] = state[2].wrapping_add(c);
        state[3] = state[3].wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (i, word) in state.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_matches_rfc_1321_test_suite() {
        let vectors = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        for (input, want) in vectors {
            assert_eq!(md5_hex(input.as_bytes()), want, "{input:?}");
        }
    }

    #[test]
    fn md5_pads_across_block_boundaries() {
        // 55, 56 and 64 bytes: the length word fits, does not fit, and a full block.
        assert_eq!(md5_hex(&[b'a'; 55]), "ef1772b6dff9a122358552954ad0df65");
        assert_eq!(md5_hex(&[b'a'; 56]), "3b0c8ac703f828b04c6c197006d17218");
        assert_eq!(md5_hex(&[b'a'; 64]), "014842d480b571495a4a0363793f7367");
    }

    #[test]
    fn params_text_is_sorted_and_escaped() {
        let mut p = BTreeMap::new();
        p.insert("b".to_string(), "x<\"y\"&\t".to_string());
        p.insert("a".to_string(), "1".to_string());
        assert_eq!(
            params_text(&p),
            " <parameters a=\"1\" b=\"x&lt;&quot;y&quot;&amp;    \"/>\n"
        );
        assert_eq!(params_text(&BTreeMap::new()), " <parameters/>\n");
    }

    fn entry(attrs: &[(&str, &str)]) -> crate::cib::Element {
        crate::cib::Element {
            name: "lrm_rsc_op".into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn digests_of_pacemaker_2_1_5_records() {
        // Recorded by Pacemaker in its scheduler corpus (params-1, rsc_c001n02 with
        // ip=127.0.0.12): the start's digest, and the 5 s monitor's (timeout 20 s).
        let start = OpParams {
            params: [("ip".to_string(), "127.0.0.12".to_string())].into(),
            ..Default::default()
        };
        let d = digests(&start, &entry(&[]), "3.16.2");
        assert_eq!(d.all, "d8eeae5f6724dfcab8f57ef54367eb0a");
        assert_eq!(d.restart, None);
        let monitor = OpParams {
            interval_ms: 5000,
            timeout_ms: 20000,
            ..start
        };
        let d = digests(&monitor, &entry(&[]), "3.16.2");
        assert_eq!(d.all, "7515405113757a8bc37db755be497fca");
    }

    #[test]
    fn check_tells_restart_reload_and_unknown_apart() {
        let op = OpParams {
            params: [("ip".to_string(), "10.0.0.1".to_string())].into(),
            ..Default::default()
        };
        let good = md5_hex(params_text(&all_params(&op)).as_bytes());
        assert_eq!(
            check(&op, &entry(&[("op-digest", &good)]), "3.16.2", true),
            DigestCheck::Match
        );
        assert_eq!(
            check(&op, &entry(&[("op-digest", "00")]), "3.16.2", true),
            DigestCheck::All
        );
        assert_eq!(
            check(&op, &entry(&[]), "3.16.2", true),
            DigestCheck::Unknown
        );
        assert_eq!(
            check(
                &op,
                &entry(&[("op-digest", &good), ("op-restart-digest", "00")]),
                "3.16.2",
                true
            ),
            DigestCheck::Restart
        );
        // Only a secure-listed parameter differs: a sanitized view sees no change.
        let secure = digests(&op, &entry(&[("op-secure-params", " ip ")]), "3.16.2").secure;
        assert_eq!(
            check(
                &op,
                &entry(&[
                    ("op-digest", "00"),
                    ("op-secure-params", " ip "),
                    ("op-secure-digest", &secure)
                ]),
                "3.16.2",
                true
            ),
            DigestCheck::Match
        );
    }

    #[test]
    fn recurring_digest_keeps_the_timeout_only() {
        let op = OpParams {
            interval_ms: 5000,
            timeout_ms: 20000,
            ..Default::default()
        };
        assert_eq!(
            params_text(&all_params(&op)),
            " <parameters CRM_meta_timeout=\"20000\"/>\n"
        );
    }
}
