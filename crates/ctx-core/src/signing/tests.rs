use super::*;
use serde_json::json;

const ATMEM_DOMAIN: &str = "ATMEM-DELEGATED-CONTEXT-V1";

fn test_key() -> SigningKeyPair {
    SigningKeyPair::from_seed(&[7u8; 32])
}

#[test]
fn rfc8032_test_1_known_answer() {
    let seed: [u8; 32] =
        hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .unwrap()
            .try_into()
            .unwrap();
    let key = SigningKeyPair::from_seed(&seed);
    assert_eq!(
        hex::encode(key.public_key().to_bytes()),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    );
    let sig = sign_bytes(b"", &key);
    assert_eq!(
        hex::encode(sig.to_bytes()),
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    );
    verify_bytes(b"", &sig, &key.public_key()).unwrap();
}

#[test]
fn sign_verify_round_trip_is_key_order_independent() {
    let key = test_key();
    let value = json!({"b": [1, 2, {"z": null, "a": "é🧠"}], "a": true});
    let sig = sign("CTX-TEST-V1", &value, &key).unwrap();
    verify("CTX-TEST-V1", &value, &sig, &key.public_key()).unwrap();
    let reordered =
        canonical::parse_strict(br#"{"a":true,"b":[1,2,{"a":"\u00e9\ud83e\udde0","z":null}]}"#)
            .unwrap();
    verify("CTX-TEST-V1", &reordered, &sig, &key.public_key()).unwrap();
    let input = signing_input("CTX-TEST-V1", &value).unwrap();
    assert_eq!(&input[..12], b"CTX-TEST-V1\0");
    assert_eq!(&input[12..], canonical::jcs(&value).unwrap().as_slice());
}

#[test]
fn any_changed_byte_fails_verification() {
    let key = test_key();
    let public = key.public_key();
    let input = signing_input("CTX-TEST-V1", &json!({"k": "value", "n": 5})).unwrap();
    let sig = sign_bytes(&input, &key);
    for i in 0..input.len() {
        let mut tampered = input.clone();
        tampered[i] ^= 0x01;
        assert!(
            verify_bytes(&tampered, &sig, &public).is_err(),
            "payload byte {i}"
        );
    }
    for i in 0..SIGNATURE_LEN {
        let mut raw = sig.to_bytes();
        raw[i] ^= 0x80;
        let tampered = Signature::from_bytes(&raw).unwrap();
        assert!(
            verify_bytes(&input, &tampered, &public).is_err(),
            "signature byte {i}"
        );
    }
    // Other value, other domain, other key.
    let value = json!({"k": "value", "n": 5});
    let sig = sign("CTX-TEST-V1", &value, &key).unwrap();
    assert!(verify("CTX-TEST-V1", &json!({"k": "value", "n": 6}), &sig, &public).is_err());
    assert!(verify("CTX-TEST-V2", &value, &sig, &public).is_err());
    let other = SigningKeyPair::from_seed(&[8u8; 32]).public_key();
    assert!(matches!(
        verify("CTX-TEST-V1", &value, &sig, &other),
        Err(SignatureError::Mismatch { .. })
    ));
}

#[test]
fn domains_and_values_are_validated() {
    let key = test_key();
    for bad in ["", "A\0B", "ÄTMEM", &"X".repeat(65)] {
        assert!(matches!(
            sign(bad, &json!({}), &key),
            Err(SignatureError::Domain { .. })
        ));
    }
    assert!(matches!(
        sign("CTX-TEST-V1", &json!({"n": u64::MAX}), &key),
        Err(SignatureError::Canonical(_))
    ));
}

#[test]
fn generated_keys_differ_and_round_trip_through_pem() {
    let a = SigningKeyPair::generate().unwrap();
    let b = SigningKeyPair::generate().unwrap();
    assert_ne!(a.public_key(), b.public_key());
    let pem = a.to_pem();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI"));
    let back = SigningKeyPair::from_pem(&pem).unwrap();
    assert_eq!(back.public_key(), a.public_key());
    assert!(!format!("{a:?}").contains(&pem[28..60]));
    // CRLF line ends are tolerated; other key forms are refused.
    assert!(SigningKeyPair::from_pem(&pem.replace('\n', "\r\n")).is_ok());
    assert!(SigningKeyPair::from_pem("").is_err());
    assert!(SigningKeyPair::from_pem(&pem.replace("PRIVATE KEY", "EC PRIVATE KEY")).is_err());
    let wrong_oid = pem.replace("MC4CAQAwBQYDK2Vw", "MC4CAQAwBQYDK2Vu");
    assert!(SigningKeyPair::from_pem(&wrong_oid).is_err());
    assert!(SigningKeyPair::from_pem(&format!("{}junk\n", pem.as_str())).is_err());
}

#[test]
fn save_is_0600_refuses_clobber_and_load_checks_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("signing.pem");
    let key = test_key();
    key.save(&path).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(matches!(key.save(&path), Err(KeyError::Exists { .. })));
    assert_eq!(
        SigningKeyPair::load(&path).unwrap().public_key(),
        key.public_key()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            SigningKeyPair::load(&path),
            Err(KeyError::Permissions { mode: 0o644, .. })
        ));
    }
}

#[test]
fn openssl_generated_keys_load_when_openssl_is_available() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.pem");
    let status = std::process::Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&path)
        .output();
    let Ok(out) = status else {
        eprintln!("note: openssl not found; skipping interop check");
        return;
    };
    assert!(out.status.success());
    let key = SigningKeyPair::from_pem(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let der = std::process::Command::new("openssl")
        .args(["pkey", "-pubout", "-outform", "DER", "-in"])
        .arg(&path)
        .output()
        .unwrap()
        .stdout;
    assert_eq!(
        &der[der.len() - 32..],
        key.public_key().to_bytes().as_slice()
    );
}

#[test]
fn public_key_encodings() {
    let public = test_key().public_key();
    let b64 = public.to_base64();
    assert_eq!(b64.len(), 44);
    assert_eq!(PublicKey::from_base64(&b64).unwrap(), public);
    assert_eq!(public.to_manifest_entry(), json!({"ed25519": b64}));
    assert_eq!(
        PublicKey::from_manifest_entry(&public.to_manifest_entry()).unwrap(),
        public
    );
    assert!(PublicKey::from_manifest_entry(&json!({"ed25519": b64, "x": 1})).is_err());
    assert!(PublicKey::from_manifest_entry(&json!({"ed25519": 5})).is_err());
    assert!(public.fingerprint().starts_with("sha256:"));
    // Non-canonical padding bits, missing padding, wrong length, weak key.
    // 32 bytes leave two zero padding bits in the last symbol; set one.
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let last = ALPHABET.find(&b64[42..43]).unwrap();
    assert_eq!(last & 0b11, 0);
    let mut noncanonical = b64.clone();
    noncanonical.replace_range(42..43, &ALPHABET[last | 1..=last | 1]);
    assert!(PublicKey::from_base64(&noncanonical).is_err());
    assert!(PublicKey::from_base64(b64.trim_end_matches('=')).is_err());
    assert!(PublicKey::from_base64(&encode_base64(&[1u8; 31])).is_err());
    let identity = {
        let mut b = [0u8; 32];
        b[0] = 1;
        b
    };
    assert!(PublicKey::from_bytes(&identity).is_err());
    // Non-canonical encodings (y >= p) of otherwise decodable points.
    let p_plus = |k: u8| {
        let mut b = [0xffu8; 32];
        b[0] = 0xed + k;
        b[31] = 0x7f;
        b
    };
    for k in 0..=18u8 {
        assert!(PublicKey::from_bytes(&p_plus(k)).is_err(), "y = p + {k}");
    }
}

#[test]
fn strict_base64_rejects_every_non_canonical_form() {
    assert_eq!(decode_base64_strict("TQ==").unwrap(), b"M");
    for bad in [
        "TR==", "TQ", "TQ=", "T Q==", "TQ==\n", "TQ-_", "*", "TWFu\r\n",
    ] {
        assert!(decode_base64_strict(bad).is_err(), "{bad:?}");
    }
    assert_eq!(decode_base64_strict("").unwrap(), b"");
}

/// The three positive AtMem fixtures verify through this module alone:
/// signature member removed, domain-separated JCS, strict Ed25519.
#[test]
fn atmem_positive_fixtures_verify() {
    let Some(dir) = crate::testutil::atmem_reference_dir() else {
        return;
    };
    let trust: Value =
        canonical::parse_strict(&std::fs::read(dir.join("trust.json")).unwrap()).unwrap();
    let public = PublicKey::from_base64(trust["public_key_base64"].as_str().unwrap()).unwrap();
    for name in [
        "inject.valid.json",
        "withhold.valid.json",
        "inject.next-turn-same-nonce.valid.json",
    ] {
        let mut envelope =
            canonical::parse_strict(&std::fs::read(dir.join(name)).unwrap()).unwrap();
        let sig_member = envelope
            .as_object_mut()
            .unwrap()
            .remove("signature")
            .unwrap();
        let sig = Signature::from_base64(sig_member["value_base64"].as_str().unwrap()).unwrap();
        verify(ATMEM_DOMAIN, &envelope, &sig, &public).unwrap_or_else(|e| panic!("{name}: {e}"));
        let input = signing_input(ATMEM_DOMAIN, &envelope).unwrap();
        assert_eq!(
            canonical::sha256_hex(&input),
            sig_member["signed_payload_sha256"].as_str().unwrap(),
            "{name}"
        );
        // One changed context byte breaks it.
        envelope["nonce"] = Value::String("AAAAAAAAAAAAAAAAAAAAAB".into());
        assert!(
            verify(ATMEM_DOMAIN, &envelope, &sig, &public).is_err(),
            "{name}"
        );
    }
}
