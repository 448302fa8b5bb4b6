#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

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
