#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::path::Path;

fn err(url: &str) -> String {
    match parse(url) {
        Ok(t) => panic!("{url:?} parsed: {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn sslmode_is_read_from_both_forms_and_taken_out() {
    let t = parse("postgres://u@db.example/x?sslmode=verify-full&application_name=a").unwrap();
    assert_eq!(t.tls, TlsMode::Require);
    assert_eq!(t.config.get_application_name(), Some("a"));
    let t = parse("host=db.example dbname=x sslmode=disable user=u").unwrap();
    assert_eq!(t.tls, TlsMode::Disable);
    assert_eq!(t.config.get_user(), Some("u"));
    assert_eq!(
        parse("host=h sslmode=require").unwrap().tls,
        TlsMode::Require
    );
    assert_eq!(parse("host=h sslmode=prefer").unwrap().tls, TlsMode::Prefer);
}

#[test]
fn sslrootcert_is_read_from_both_forms_taken_out_and_implies_tls() {
    let t = parse("postgres://u@localhost/x?sslrootcert=%2Fetc%2Fmy%20ca.pem&application_name=a")
        .unwrap();
    assert_eq!(t.root_cert.as_deref(), Some(Path::new("/etc/my ca.pem")));
    // A CA named for a local server still means TLS.
    assert_eq!(t.tls, TlsMode::Require);
    assert_eq!(t.config.get_application_name(), Some("a"));
    let t = parse("host=h sslrootcert='/a b/ca.pem' sslmode=prefer dbname=x").unwrap();
    assert_eq!(t.root_cert.as_deref(), Some(Path::new("/a b/ca.pem")));
    assert_eq!(t.tls, TlsMode::Prefer);
    assert_eq!(t.config.get_dbname(), Some("x"));
    // `system` is libpq's word for the system's roots.
    let t = parse("host=h sslrootcert=system").unwrap();
    assert_eq!((t.root_cert, t.tls), (None, TlsMode::Require));
}

#[test]
fn without_sslmode_local_servers_are_plain_and_remote_ones_prefer_tls() {
    for local in [
        "host=/tmp/sock dbname=x",
        "postgres://u@localhost/x",
        "postgres://u@127.0.0.1:5433/x",
        "host=::1",
    ] {
        assert_eq!(parse(local).unwrap().tls, TlsMode::Disable, "{local}");
    }
    assert_eq!(
        parse("postgres://u@db.example/x").unwrap().tls,
        TlsMode::Prefer
    );
}

#[test]
fn malformed_strings_fail_in_one_line_without_the_password() {
    for (url, secret) in [
        ("postgres://bob:s3cr3t-pw@host:notaport/db", "s3cr3t-pw"),
        ("host=h password=s3cr3t-pw port=nope", "s3cr3t-pw"),
        ("host=h password='s3 cr3t' sslmode=bogus", "s3 cr3t"),
        ("host=h password='unterminated s3cr3t", "s3cr3t"),
        ("postgres://bob:s3cr3t@h/db?sslmode=sometimes", "s3cr3t"),
        ("postgres://h/db?password=s3cr3t&port=x", "s3cr3t"),
        (
            "postgres://h/db?application_name=a sslmode=require password=s3cr3t",
            "s3cr3t",
        ),
    ] {
        let msg = err(url);
        assert!(msg.contains("malformed PostgreSQL URL"), "{msg}");
        assert!(!msg.contains(secret), "{url}: {msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }
    assert!(err("dbname=x").contains("no host"));
}

#[test]
fn the_shown_name_has_host_port_and_database_but_no_password() {
    let t = parse("postgres://bob:pw%40x@db.example:6000/sessions").unwrap();
    assert_eq!(t.shown, "database sessions on db.example:6000");
    assert_eq!(t.scrub("a pw%40x b pw@x c"), "a *** b *** c");
    let t = parse("host=/run/pg port=5433 dbname=d").unwrap();
    assert_eq!(t.shown, "database d on /run/pg/.s.PGSQL.5433");
}

#[test]
fn key_value_pairs_honour_quotes_and_escapes() {
    let pairs = kv_pairs(r"a=1 b = 'x y' c='it\'s'").unwrap();
    let kv: Vec<(&str, &str)> = pairs
        .iter()
        .map(|p| (p.key.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(kv, [("a", "1"), ("b", "x y"), ("c", "it's")]);
    assert!(kv_pairs("a").is_err());
}

/// Every hostile spelling of a password, and the text that must never be
/// shown for it.
const HOSTILE: &[(&str, &[&str])] = &[
    // `@` unencoded in the password: the client splits at the first `@`.
    ("postgres://bob:p@ss@db.example:1/app", &["p@ss", "ss@"]),
    ("postgres://bob:a@b@c@db.example/app", &["a@b@c", "b@c"]),
    // `:` and `/`, `?`, `#` in the password.
    ("postgres://bob:pa:ss@db.example/app", &["pa:ss", ":ss"]),
    ("postgres://bob:pa/ss@db.example/app", &["pa/ss", "/ss"]),
    ("postgres://bob:pa?ss=1@db.example/app", &["pa?ss", "ss=1"]),
    ("postgres://bob:pa#ss@db.example/app", &["pa#ss", "#ss"]),
    // Percent-encoded, and no user.
    (
        "postgres://bob:p%40ss%2Fw@db.example/app",
        &["p%40ss", "p@ss/w"],
    ),
    ("postgres://:s3cr3t@db.example/app", &["s3cr3t"]),
    // A query parameter, plain and encoded.
    ("postgres://db.example/app?password=s3cr3t", &["s3cr3t"]),
    (
        "postgres://db.example/app?password=s%40cr3t",
        &["s%40cr3t", "s@cr3t"],
    ),
];

#[test]
fn a_password_with_at_colon_slash_or_query_signs_is_read_whole() {
    for (url, _) in &HOSTILE[..6] {
        let t = parse(url).unwrap();
        assert_eq!(t.config.get_user(), Some("bob"), "{url}");
        let want = url_password_range(url).map(|r| url[r].to_string());
        let got = t
            .config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        assert_eq!(got, want, "{url}");
        assert_eq!(t.config.get_dbname(), Some("app"), "{url}");
        assert!(
            t.shown.starts_with("database app on db.example:"),
            "{url}: {}",
            t.shown
        );
    }
}

#[test]
fn no_hostile_password_spelling_reaches_the_shown_name_or_a_scrubbed_message() {
    for (url, secrets) in HOSTILE {
        let t = parse(url).unwrap();
        // A library's message may echo the string as written or the
        // password as the client decoded it.
        let decoded = t.config.get_password().map(String::from_utf8_lossy);
        let message = format!("error for {} with {url} and {decoded:?}", t.shown);
        let scrubbed = t.scrub(&message);
        for secret in *secrets {
            assert!(!t.shown.contains(secret), "{url}: {}", t.shown);
            assert!(!scrubbed.contains(secret), "{url}: {scrubbed}");
        }
    }
}

#[test]
fn a_malformed_url_never_shows_any_part_of_a_hostile_password() {
    for (url, secrets) in HOSTILE {
        // The same URL made unreadable: a port that is not a number.
        let broken = url.replacen("db.example", "db.example:notaport", 1);
        let msg = err(&broken);
        assert!(msg.contains("malformed PostgreSQL URL"), "{msg}");
        for secret in *secrets {
            assert!(!msg.contains(secret), "{broken}: {msg}");
        }
    }
    // The `@` forgotten: `user:secret` reads as a host and a port.
    let msg = err("postgres://bob:s3cr3t/app");
    assert!(!msg.contains("s3cr3t"), "{msg}");
    let msg = err("postgres://bob:s3cr3t@db.example:1/app x");
    assert!(!msg.contains("s3cr3t"), "{msg}");
}

#[test]
fn password_spans_cover_every_spelling_so_a_command_line_can_be_blanked() {
    let blank = |s: &str| {
        let mut out = s.as_bytes().to_vec();
        for r in password_spans(s) {
            out[r].fill(b'*');
        }
        String::from_utf8(out).unwrap()
    };
    for (url, secrets) in HOSTILE {
        let shown = blank(url);
        for secret in *secrets {
            assert!(!shown.contains(secret), "{url}: {shown}");
        }
        assert!(shown.contains("db.example"), "{shown}");
    }
    assert_eq!(
        blank("host=h password='a b' user=u"),
        "host=h password=***** user=u"
    );
    assert_eq!(blank("postgres://bob:s3cr3t/app"), "*".repeat(25));
    assert_eq!(blank("postgres://u@h/db"), "postgres://u@h/db");
}

#[test]
fn pgpassword_is_used_only_when_the_string_holds_no_password_and_is_scrubbed() {
    let env = Some("from-env".to_string());
    let t = parse_with("postgres://bob@db.example/app", env.clone()).unwrap();
    assert_eq!(t.config.get_password(), Some(&b"from-env"[..]));
    assert_eq!(t.scrub("auth from-env failed"), "auth *** failed");
    let t = parse_with("host=h user=bob", env.clone()).unwrap();
    assert_eq!(t.config.get_password(), Some(&b"from-env"[..]));
    let t = parse_with("postgres://bob:given@db.example/app", env).unwrap();
    assert_eq!(t.config.get_password(), Some(&b"given"[..]));
    let t = parse_with("postgres://bob@db.example/app", Some(String::new())).unwrap();
    assert_eq!(t.config.get_password(), None);
}
