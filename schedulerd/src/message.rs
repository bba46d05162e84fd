//! The controller's messages in Pacemaker's vocabulary: the request (`crm_task`, `subt`,
//! `crm_sys_to`, `reference`, the CIB inside `<crm_xml>`) and what goes back (an `<ack>`, and
//! the reply carrying the transition graph, `crm-tgraph-in` and the error and warning counts).

use quick_xml::events::Event;

/// `CRM_SYSTEM_PENGINE`: the scheduler's system name, the only `crm_sys_to` it serves.
pub const SYSTEM: &str = "pengine";
/// `CRM_OP_PECALC`.
pub const OP_PECALC: &str = "pe_calc";
/// `CRM_OP_HELLO`.
pub const OP_HELLO: &str = "hello";
/// `CRM_FEATURE_SET` of Pacemaker 2.1.5.
pub const FEATURE_SET: &str = "3.16.1";

/// `CRM_EX_INVALID_PARAM`, `CRM_EX_PROTOCOL`, `CRM_EX_INDETERMINATE`.
pub const EX_INVALID_PARAM: i32 = 2;
pub const EX_PROTOCOL: i32 = 76;
pub const EX_INDETERMINATE: i32 = 112;

/// Why a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("request XML: {0}")]
    Xml(String),
    #[error("request has no root element")]
    Empty,
}

/// A request, as far as the scheduler reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// The root's attributes, in order (the reply reverses `crm_sys_to` and `crm_sys_from`).
    pub attrs: Vec<(String, String)>,
    /// The text of the element inside `<crm_xml>` (the CIB of a `pe_calc`), if any.
    pub data: Option<String>,
}

impl Request {
    /// An attribute of the root element.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `crm_task`.
    pub fn task(&self) -> Option<&str> {
        self.attr("crm_task")
    }

    /// Whether the message is itself a reply (`subt="response"`), which the scheduler ignores.
    pub fn is_response(&self) -> bool {
        self.attr("subt") == Some("response")
    }

    /// Whether it is addressed to the scheduler.
    pub fn is_for_scheduler(&self) -> bool {
        self.attr("crm_sys_to") == Some(SYSTEM)
    }
}

fn xml_error(e: impl std::fmt::Display) -> MessageError {
    MessageError::Xml(e.to_string())
}

/// Reads a request: the root's attributes and the text of the first element in `<crm_xml>`.
pub fn parse_request(xml: &str) -> Result<Request, MessageError> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut req = Request::default();
    let mut depth = 0usize;
    let mut root_seen = false;
    let mut data_start: Option<usize> = None;
    loop {
        let before = reader.buffer_position() as usize;
        match reader.read_event().map_err(xml_error)? {
            Event::Start(e) => {
                if depth == 0 {
                    req.attrs = attributes(&e)?;
                    root_seen = true;
                } else if depth == 1 && e.name().as_ref() == b"crm_xml" && req.data.is_none() {
                    data_start = Some(reader.buffer_position() as usize);
                }
                depth += 1;
            }
            Event::Empty(e) if depth == 0 => {
                req.attrs = attributes(&e)?;
                return Ok(req);
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                if depth == 1 && e.name().as_ref() == b"crm_xml" {
                    if let Some(start) = data_start.take() {
                        let inner = xml.get(start..before).unwrap_or("").trim();
                        req.data = (!inner.is_empty()).then(|| inner.to_string());
                    }
                }
                if depth == 0 {
                    return Ok(req);
                }
            }
            Event::Eof if !root_seen => return Err(MessageError::Empty),
            Event::Eof => return Err(MessageError::Xml("truncated document".into())),
            _ => {}
        }
    }
}

fn attributes(
    e: &quick_xml::events::BytesStart<'_>,
) -> Result<Vec<(String, String)>, MessageError> {
    let mut out = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(xml_error)?;
        let k = String::from_utf8_lossy(a.key.as_ref()).into_owned();
        let v = a.unescape_value().map_err(xml_error)?.into_owned();
        out.push((k, v));
    }
    Ok(out)
}

/// Escapes an attribute value.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// The `<ack>` Pacemaker sends a client that asked for a response (`pcmk__ipc_create_ack`).
pub fn ack_xml(function: &str, status: i32) -> String {
    format!(
        "<ack function=\"{}\" line=\"0\" status=\"{status}\"/>",
        escape(function)
    )
}

/// What a `pe_calc` reply carries besides the graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyCounts {
    /// `crm-tgraph-in`: where the input was saved (absent when not saved).
    pub input_path: Option<String>,
    pub graph_errors: bool,
    pub graph_warnings: bool,
    pub config_errors: bool,
    pub config_warnings: bool,
}

/// The reply to `req` (as `create_reply` builds it), with `graph` inside `<crm_xml>`.
pub fn reply_xml(req: &Request, graph: &str, counts: &ReplyCounts) -> String {
    let mut attrs: Vec<(&str, String)> = vec![
        ("origin", "handle_pecalc_request".into()),
        ("t", "crmd".into()),
        ("version", FEATURE_SET.into()),
        ("subt", "response".into()),
    ];
    let copy = |a: &mut Vec<(&str, String)>, name: &'static str, from: &str| {
        if let Some(v) = req.attr(from) {
            a.push((name, v.to_string()));
        }
    };
    copy(&mut attrs, "reference", "reference");
    copy(&mut attrs, "crm_task", "crm_task");
    copy(&mut attrs, "crm_sys_to", "crm_sys_from");
    copy(&mut attrs, "crm_sys_from", "crm_sys_to");
    if let Some(host) = req.attr("src").filter(|h| !h.is_empty()) {
        attrs.push(("crm_host_to", host.to_string()));
    }
    if let Some(path) = &counts.input_path {
        attrs.push(("crm-tgraph-in", path.clone()));
    }
    for (name, v) in [
        ("graph-errors", counts.graph_errors),
        ("graph-warnings", counts.graph_warnings),
        ("config-errors", counts.config_errors),
        ("config-warnings", counts.config_warnings),
    ] {
        attrs.push((name, u8::from(v).to_string()));
    }
    let head: String = attrs
        .iter()
        .map(|(k, v)| format!(" {k}=\"{}\"", escape(v)))
        .collect();
    format!(
        "<create_reply_adv{head}><crm_xml>{}</crm_xml></create_reply_adv>",
        graph.trim()
    )
}

/// Sets the `execution-date` attribute of the document's root element (as the scheduler
/// does before saving an input), replacing an existing one.
pub fn with_execution_date(cib: &str, when: i64) -> String {
    let Some(open) = cib.find('<').filter(|&i| !cib[i..].starts_with("<?")) else {
        return cib.to_string();
    };
    let Some(close) = cib[open..].find('>').map(|i| open + i) else {
        return cib.to_string();
    };
    let tag = &cib[open..close];
    let attr = " execution-date=\"";
    let new_tag = match tag.find(attr) {
        Some(at) => {
            let value_start = at + attr.len();
            let value_end = tag[value_start..]
                .find('"')
                .map_or(tag.len(), |i| value_start + i);
            format!("{}{when}{}", &tag[..value_start], &tag[value_end..])
        }
        None => {
            let name_end = tag
                .find(|c: char| c.is_whitespace() || c == '/')
                .unwrap_or(tag.len());
            format!("{}{attr}{when}\"{}", &tag[..name_end], &tag[name_end..])
        }
    };
    format!("{}{new_tag}{}", &cib[..open], &cib[close..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: &str = "<create_request_adv origin=\"do_pe_invoke_callback\" t=\"crmd\" version=\"3.16.1\" subt=\"request\" reference=\"pe_calc-crmd-1-2\" crm_task=\"pe_calc\" crm_sys_to=\"pengine\" crm_sys_from=\"123_crmd\"><crm_xml><cib epoch=\"1\"><configuration/></cib></crm_xml></create_request_adv>";

    #[test]
    fn reads_a_pe_calc_request() {
        let r = parse_request(REQ).unwrap();
        assert_eq!(r.task(), Some("pe_calc"));
        assert!(r.is_for_scheduler() && !r.is_response());
        assert_eq!(
            r.data.as_deref(),
            Some("<cib epoch=\"1\"><configuration/></cib>")
        );
    }

    #[test]
    fn reply_reverses_the_systems_and_carries_the_counts() {
        let r = parse_request(REQ).unwrap();
        let counts = ReplyCounts {
            input_path: Some("/var/lib/pacemaker/pengine/pe-input-3.bz2".into()),
            ..ReplyCounts::default()
        };
        let x = reply_xml(&r, "<transition_graph/>", &counts);
        let back = parse_request(&x).unwrap();
        assert_eq!(back.attr("crm_sys_to"), Some("123_crmd"));
        assert_eq!(back.attr("crm_sys_from"), Some("pengine"));
        assert_eq!(back.attr("subt"), Some("response"));
        assert_eq!(back.attr("reference"), Some("pe_calc-crmd-1-2"));
        assert_eq!(
            back.attr("crm-tgraph-in"),
            Some("/var/lib/pacemaker/pengine/pe-input-3.bz2")
        );
        assert_eq!(back.attr("graph-errors"), Some("0"));
        assert_eq!(back.data.as_deref(), Some("<transition_graph/>"));
    }

    #[test]
    fn truncated_and_empty_requests_are_errors() {
        assert!(parse_request(&REQ[..60]).is_err());
        assert!(parse_request("").is_err());
        assert!(parse_request("<a").is_err());
    }

    #[test]
    fn execution_date_is_set_or_replaced() {
        assert_eq!(
            with_execution_date("<cib epoch=\"1\"><x/></cib>", 5),
            "<cib execution-date=\"5\" epoch=\"1\"><x/></cib>"
        );
        assert_eq!(
            with_execution_date("<cib execution-date=\"1\" a=\"b\"/>", 7),
            "<cib execution-date=\"7\" a=\"b\"/>"
        );
    }
}
