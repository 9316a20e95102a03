//! What binds an answer to the exact call it answers: a call's fingerprint (SHA-256 of its tool
//! name and canonical arguments) and, when the agent has an approval key, a token: HMAC-SHA256
//! (RFC 2104, written here over the `sha2` crate) of the session, the call's assistant row, its
//! id, its tool and its fingerprint.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::PendingCall;

/// The fingerprint of a call: hex SHA-256 of its tool name, a zero byte, and its arguments as
/// canonical JSON (object keys sorted, no whitespace), so the same arguments always give the
/// same fingerprint whatever order the model wrote them in.
pub(crate) fn fingerprint(tool: &str, arguments: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(arguments, &mut canonical);
    let digest = Sha256::new()
        .chain_update(tool.as_bytes())
        .chain_update([0])
        .chain_update(canonical.as_bytes())
        .finalize();
    hex(&digest)
}

/// `value` as JSON with every object's keys in byte order.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (at, (key, value)) in entries.into_iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The token of a waiting call: hex HMAC-SHA256 under `key` of its session, row, id, tool and
/// fingerprint, each length-prefixed so no two different calls share the message.
pub(crate) fn token(
    key: &[u8],
    session: &str,
    row: i64,
    call_id: &str,
    tool: &str,
    fingerprint: &str,
) -> String {
    let row = row.to_string();
    let mut message = Vec::new();
    for field in [session, &row, call_id, tool, fingerprint] {
        message.extend_from_slice(&(field.len() as u64).to_be_bytes());
        message.extend_from_slice(field.as_bytes());
    }
    hex(&hmac_sha256(key, &message))
}

/// The token of the waiting call `call` of assistant row `row` in `session` (see [`token`]).
pub(crate) fn call_token(key: &[u8], session: &str, row: i64, call: &PendingCall) -> String {
    token(key, session, row, &call.id, &call.tool, &call.fingerprint)
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
pub(crate) fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |differ, (x, y)| differ | (x ^ y))
            == 0
}

/// HMAC-SHA256 (RFC 2104): SHA-256 over the key padded to the 64-byte block (hashed first when
/// longer) XOR `opad`, then the inner hash of the key XOR `ipad` and the message.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    let mut mac = [0u8; 32];
    mac.copy_from_slice(&outer);
    mac
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The test cases of RFC 4231 (HMAC-SHA-256), all but 5 (a truncated output).
    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        let cases: [(Vec<u8>, Vec<u8>, &str); 6] = [
            (
                vec![0x0b; 20],
                b"Hi There".to_vec(),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                vec![0xaa; 20],
                vec![0xdd; 50],
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
            ),
            (
                (1..=25).collect(),
                vec![0xcd; 50],
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            ),
            (
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than \
                  block-size data. The key needs to be hashed before being used by the HMAC \
                  algorithm."
                    .to_vec(),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (key, message, expected) in cases {
            assert_eq!(hex(&hmac_sha256(&key, &message)), expected);
        }
    }

    #[test]
    fn a_fingerprint_reads_the_arguments_whatever_their_key_order() {
        let a = fingerprint(
            "transfer",
            &json!({"to": "bob", "amount": {"eur": 5, "cents": 0}}),
        );
        let b = fingerprint(
            "transfer",
            &json!({"amount": {"cents": 0, "eur": 5}, "to": "bob"}),
        );
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert_ne!(
            a,
            fingerprint("transfer", &json!({"to": "bob", "amount": 5}))
        );
        assert_ne!(
            a,
            fingerprint(
                "pay",
                &json!({"to": "bob", "amount": {"eur": 5, "cents": 0}})
            )
        );
        // SHA-256 of "t\0{}", computed elsewhere.
        assert_eq!(fingerprint("t", &json!({})), hex(&Sha256::digest(b"t\0{}")));
    }

    #[test]
    fn a_token_binds_every_field() {
        let key = b"secret";
        let base = token(key, "s", 7, "c1", "delete", "f");
        assert_eq!(base, token(key, "s", 7, "c1", "delete", "f"));
        for other in [
            token(b"other", "s", 7, "c1", "delete", "f"),
            token(key, "s2", 7, "c1", "delete", "f"),
            token(key, "s", 8, "c1", "delete", "f"),
            token(key, "s", 7, "c2", "delete", "f"),
            token(key, "s", 7, "c1", "remove", "f"),
            token(key, "s", 7, "c1", "delete", "g"),
            // Moving bytes from one field to the next changes the message (length prefixes).
            token(key, "s", 7, "c1d", "elete", "f"),
        ] {
            assert_ne!(base, other);
        }
        assert!(same_token(&base, &base.clone()));
        assert!(!same_token(&base, &base[1..]));
    }
}
