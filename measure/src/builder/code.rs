//! The identity of the code a candidate builds: what a tuning database keeps with each record, so a record measured on code this build no longer makes is known as such.
//!
//! Two builds of one trace make the same machine code exactly when their
//! kernel objects are equal byte for byte (LLVM writes no time or path into
//! an object). The identity of a candidate's code is therefore the SHA-256
//! of its object, or, for a fixed-length scalable kind compiled once per
//! vector length, the SHA-256 of every object's vector length and hash.
//! A change to the schedule language, lowering, codegen or LLVM that leaves
//! a candidate's object as it was leaves its identity, and so its record,
//! valid; any other change shows.

use sha2::{Digest, Sha256};

/// The SHA-256 of one kernel object, in hex.
pub fn object_code(object: &[u8]) -> String {
    hex(&Sha256::digest(object))
}

/// The identity of a candidate's code from its objects: each one's
/// [`object_code`] and the vector length it was specialized to (`None`:
/// valid at every length). One object valid at every length is its own
/// hash; several are hashed together in vector-length order. Empty if
/// there is no object (the build failed, or the harness came from elsewhere).
pub fn code_identity(objects: &[(Option<u32>, String)]) -> String {
    let mut parts: Vec<&(Option<u32>, String)> = objects.iter().filter(|(_, code)| !code.is_empty()).collect();
    match parts.as_slice() {
        [] => String::new(),
        [(None, code)] => code.clone(),
        _ => {
            parts.sort();
            let mut h = Sha256::new();
            for (vl, code) in parts {
                let vl = vl.map_or_else(|| "any".to_string(), |v| v.to_string());
                h.update(format!("{vl}:{code}\n").as_bytes());
            }
            hex(&h.finalize())
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_object_for_every_length_is_its_own_hash() {
        let code = object_code(b"\x7fELF object");
        assert_eq!(code.len(), 64);
        assert_eq!(code_identity(&[(None, code.clone())]), code);
        assert_ne!(object_code(b"\x7fELF other"), code);
    }

    #[test]
    fn objects_per_length_hash_together_in_any_order_and_no_object_is_no_identity() {
        let (a, b) = (object_code(b"a"), object_code(b"b"));
        let ab = code_identity(&[(Some(128), a.clone()), (Some(256), b.clone())]);
        assert_eq!(ab, code_identity(&[(Some(256), b.clone()), (Some(128), a.clone())]));
        assert_ne!(ab, code_identity(&[(Some(128), b.clone()), (Some(256), a.clone())]));
        assert_ne!(ab, a);
        // One length's object alone is still tied to its length.
        assert_ne!(code_identity(&[(Some(128), a.clone())]), a);
        assert_eq!(code_identity(&[]), "");
        assert_eq!(code_identity(&[(None, String::new())]), "");
    }
}
