//! Pacemaker's IPC framing (`pcmk__ipc_header_t`, Pacemaker 2.1.5): a 40-byte header (libqb's
//! response header, then the uncompressed and compressed sizes, the flags and the version),
//! then the XML text with its terminating NUL, bzip2-compressed when it would not fit the
//! IPC buffer.
//!
//! Header layout (x86-64, native byte order): qb id at 0, qb size at 8, qb error at 16 (each
//! an `int32_t` aligned to 8), `size_uncompressed` at 24, `size_compressed` at 28, `flags` at
//! 32, `version` at 36; 40 bytes in all.

use crate::ffi;

/// Size of `pcmk__ipc_header_t`.
pub const HEADER_LEN: usize = 40;
/// `PCMK__IPC_VERSION`: newer headers are refused, as Pacemaker does.
pub const IPC_VERSION: u8 = 1;
/// Pacemaker's default IPC buffer size (`crm_ipc_default_buffer_size()`, without
/// `PCMK_ipc_buffer`).
pub const DEFAULT_BUFFER_SIZE: u32 = 128 * 1024;
/// The largest decompressed message accepted (a CIB of thousands of resources is a few MiB).
pub const MAX_UNCOMPRESSED: u32 = 64 * 1024 * 1024;

/// `crm_ipc_compressed`.
pub const FLAG_COMPRESSED: u32 = 0x0000_0001;
/// `crm_ipc_proxied`.
pub const FLAG_PROXIED: u32 = 0x0000_0100;
/// `crm_ipc_client_response`: the client waits for a response (an ack, here).
pub const FLAG_CLIENT_RESPONSE: u32 = 0x0000_0200;
/// `crm_ipc_server_event`.
pub const FLAG_SERVER_EVENT: u32 = 0x0001_0000;
/// `crm_ipc_server_free`.
pub const FLAG_SERVER_FREE: u32 = 0x0002_0000;

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("message of {0} bytes is shorter than the {HEADER_LEN}-byte header")]
    Short(usize),
    #[error("header version {0} is newer than {IPC_VERSION}")]
    Version(u8),
    #[error("header says {said} bytes of payload, the message holds {held}")]
    Truncated { said: usize, held: usize },
    #[error("uncompressed size {0} is 0 or over the limit")]
    Size(u32),
    #[error("bzip2 decompression failed (libbz2 code {0})")]
    Decompress(i32),
    #[error("decompressed {got} bytes, the header promised {said}")]
    SizeMismatch { said: usize, got: usize },
    #[error("payload does not end with NUL")]
    NoNul,
    #[error("payload is not UTF-8")]
    NotUtf8,
    #[error("message of {size} bytes does not fit the {max}-byte IPC buffer even compressed")]
    TooBig { size: usize, max: u32 },
}

/// A decoded message: the client's request id, its flags and its XML text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub id: u32,
    pub flags: u32,
    pub xml: String,
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&data[at..at + 4]);
    u32::from_ne_bytes(b)
}

/// The request id and flags of a message, if its header is whole (for acking a bad one).
pub fn peek(data: &[u8]) -> Option<(u32, u32)> {
    (data.len() >= HEADER_LEN).then(|| (u32_at(data, 0), u32_at(data, 32)))
}

/// Decodes one message as `pcmk__client_data2xml` does, but refusing instead of asserting.
pub fn decode(data: &[u8]) -> Result<Frame, WireError> {
    let (id, flags) = peek(data).ok_or(WireError::Short(data.len()))?;
    let version = data[36];
    if version > IPC_VERSION {
        return Err(WireError::Version(version));
    }
    let size_uncompressed = u32_at(data, 24);
    let size_compressed = u32_at(data, 28);
    if size_uncompressed == 0 || size_uncompressed > MAX_UNCOMPRESSED {
        return Err(WireError::Size(size_uncompressed));
    }
    let body = &data[HEADER_LEN..];
    let text = if size_compressed > 0 {
        let packed = body
            .get(..size_compressed as usize)
            .ok_or(WireError::Truncated {
                said: size_compressed as usize,
                held: body.len(),
            })?;
        let out = ffi::bz2_decompress(packed, size_uncompressed as usize)
            .map_err(WireError::Decompress)?;
        if out.len() != size_uncompressed as usize {
            return Err(WireError::SizeMismatch {
                said: size_uncompressed as usize,
                got: out.len(),
            });
        }
        out
    } else {
        body.get(..size_uncompressed as usize)
            .ok_or(WireError::Truncated {
                said: size_uncompressed as usize,
                held: body.len(),
            })?
            .to_vec()
    };
    let (last, text) = text.split_last().ok_or(WireError::NoNul)?;
    if *last != 0 {
        return Err(WireError::NoNul);
    }
    // Pacemaker parses up to the first NUL.
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let xml = std::str::from_utf8(&text[..end]).map_err(|_| WireError::NotUtf8)?;
    Ok(Frame {
        id,
        flags,
        xml: xml.to_string(),
    })
}

/// Encodes `xml` as one message with the qb id `id` and the header flags `flags`, compressed
/// (and flagged so) when it would not fit `max_send_size`, as `pcmk__ipc_prepare_iov` does.
pub fn encode(id: u32, flags: u32, xml: &str, max_send_size: u32) -> Result<Vec<u8>, WireError> {
    let mut text = Vec::with_capacity(xml.len() + 1);
    text.extend_from_slice(xml.as_bytes());
    text.push(0);
    let too_big = WireError::TooBig {
        size: text.len(),
        max: max_send_size,
    };
    let size_uncompressed = u32::try_from(text.len()).map_err(|_| too_big.clone())?;
    let (payload, size_compressed, flags) = if HEADER_LEN + text.len() < max_send_size as usize {
        (text, 0, flags)
    } else {
        let packed = ffi::bz2_compress(&text, max_send_size as usize).ok_or(too_big.clone())?;
        let n = u32::try_from(packed.len()).map_err(|_| too_big.clone())?;
        (packed, n, flags | FLAG_COMPRESSED)
    };
    let total = HEADER_LEN + payload.len();
    let mut out = vec![0u8; HEADER_LEN];
    out[0..4].copy_from_slice(&id.to_ne_bytes());
    out[8..12].copy_from_slice(&(total as u32).to_ne_bytes());
    out[24..28].copy_from_slice(&size_uncompressed.to_ne_bytes());
    out[28..32].copy_from_slice(&size_compressed.to_ne_bytes());
    out[32..36].copy_from_slice(&flags.to_ne_bytes());
    out[36] = IPC_VERSION;
    out.extend_from_slice(&payload);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_round_trip() {
        let m = encode(7, FLAG_CLIENT_RESPONSE, "<a b=\"1\"/>", DEFAULT_BUFFER_SIZE).unwrap();
        assert_eq!(m.len(), HEADER_LEN + 11);
        let f = decode(&m).unwrap();
        assert_eq!(
            (f.id, f.flags, f.xml.as_str()),
            (7, FLAG_CLIENT_RESPONSE, "<a b=\"1\"/>")
        );
    }

    #[test]
    fn big_messages_are_compressed_and_round_trip() {
        let xml = format!("<a>{}</a>", "x".repeat(300_000));
        let m = encode(1, 0, &xml, DEFAULT_BUFFER_SIZE).unwrap();
        assert!(m.len() < DEFAULT_BUFFER_SIZE as usize);
        assert_eq!(u32_at(&m, 32) & FLAG_COMPRESSED, FLAG_COMPRESSED);
        assert_eq!(decode(&m).unwrap().xml, xml);
    }

    #[test]
    fn bad_messages_are_refused() {
        assert_eq!(decode(&[0; 10]), Err(WireError::Short(10)));
        let mut m = encode(1, 0, "<a/>", DEFAULT_BUFFER_SIZE).unwrap();
        m.truncate(m.len() - 1);
        assert!(matches!(decode(&m), Err(WireError::Truncated { .. })));
        let mut m = encode(1, 0, "<a/>", DEFAULT_BUFFER_SIZE).unwrap();
        m[36] = 2;
        assert_eq!(decode(&m), Err(WireError::Version(2)));
        let mut m = encode(1, 0, "<a/>", DEFAULT_BUFFER_SIZE).unwrap();
        m[28] = 3; // claims a compressed payload that is not bzip2
        assert!(decode(&m).is_err());
    }
}
