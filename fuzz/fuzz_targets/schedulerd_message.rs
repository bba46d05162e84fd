//! Fuzz target: highlander-schedulerd's message decoding. Whatever bytes a client sends, the
//! IPC frame decoder and the request reader return an error or a value, never panic; and any
//! text framed by the encoder (plain or bzip2-compressed) decodes back to itself.
#![no_main]

use highlander_schedulerd::{message, wire};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        // Raw bytes as a client would send them: header, then payload.
        if let Ok(frame) = wire::decode(rest) {
            let _ = message::parse_request(&frame.xml);
        }
        return;
    }
    // Text through the encoder: small buffers force compression.
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if text.contains('\0') {
        return;
    }
    let max = if selector & 2 == 0 { 64 * 1024 } else { 256 };
    if let Ok(bytes) = wire::encode(7, 0, text, max) {
        let frame = wire::decode(&bytes).expect("an encoded frame decodes");
        assert_eq!(frame.xml, text);
        assert_eq!(frame.id, 7);
    }
    if let Ok(req) = message::parse_request(text) {
        let reply = message::reply_xml(&req, "<transition_graph/>", &message::ReplyCounts::default());
        message::parse_request(&reply).expect("a reply we build parses");
    }
});
