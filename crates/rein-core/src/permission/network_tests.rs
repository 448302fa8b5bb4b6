#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

fn policy(allow: &[&str], deny: &[&str]) -> HostPolicy {
    HostPolicy {
        allow: allow.iter().map(|p| p.parse().unwrap()).collect(),
        deny: deny.iter().map(|p| p.parse().unwrap()).collect(),
    }
}

fn target(s: &str) -> Target {
    Target::parse(s, None).unwrap()
}

#[test]
fn a_listed_name_is_allowed_on_the_web_ports_only_unless_a_port_is_listed() {
    let p = policy(&["example.org", "dev.example.org:8080"], &[]);
    assert_eq!(
        p.decide(&target("example.org:443")),
        Decision::Allowed { exact: true }
    );
    assert_eq!(
        p.decide(&target("example.org:80")),
        Decision::Allowed { exact: true }
    );
    assert_eq!(p.decide(&target("example.org:22")), Decision::NotListed);
    assert_eq!(
        p.decide(&target("dev.example.org:8080")),
        Decision::Allowed { exact: true }
    );
    assert_eq!(
        p.decide(&target("dev.example.org:443")),
        Decision::NotListed
    );
}

#[test]
fn a_wildcard_matches_names_below_it_but_not_the_name_or_lookalikes() {
    let p = policy(&["*.example.com"], &[]);
    assert_eq!(
        p.decide(&target("a.b.example.com:443")),
        Decision::Allowed { exact: false }
    );
    assert_eq!(p.decide(&target("example.com:443")), Decision::NotListed);
    assert_eq!(
        p.decide(&target("evilexample.com:443")),
        Decision::NotListed
    );
    assert_eq!(
        p.decide(&target("example.com.evil.net:443")),
        Decision::NotListed
    );
}

#[test]
fn the_deny_list_wins_over_the_allow_list() {
    let p = policy(&["*.example.com"], &["secret.example.com"]);
    assert!(matches!(
        p.decide(&target("secret.example.com:443")),
        Decision::Denied(_)
    ));
    assert_eq!(
        p.decide(&target("www.example.com:443")),
        Decision::Allowed { exact: false }
    );
}

#[test]
fn names_are_matched_case_blind_and_without_a_trailing_dot() {
    let p = policy(&["example.org"], &[]);
    assert_eq!(
        p.decide(&target("EXAMPLE.Org.:443")),
        Decision::Allowed { exact: true }
    );
}

#[test]
fn ip_literals_match_only_an_ip_listed_exactly() {
    let p = policy(&["example.org", "10.0.0.5:5000", "[::1]:8000"], &[]);
    assert_eq!(p.decide(&target("93.184.215.14:443")), Decision::NotListed);
    assert_eq!(
        p.decide(&target("10.0.0.5:5000")),
        Decision::Allowed { exact: true }
    );
    assert_eq!(
        p.decide(&target("[::1]:8000")),
        Decision::Allowed { exact: true }
    );
}

#[test]
fn hosts_with_control_characters_or_odd_forms_are_refused() {
    for bad in [
        "example.org\0.evil.net:443",
        "exa mple.org:443",
        "example.org%00:443",
        "exämple.org:443",
        "a..b:443",
        ":443",
        "2130706433:80",
        "127.1:80",
        "0x7f.1:80",
        "example.org:0",
        "example.org:99999",
        "example.org:+80",
        "example.org",
    ] {
        assert!(Target::parse(bad, None).is_err(), "{bad:?} was accepted");
    }
    assert!("*.10.0.0.1".parse::<HostPattern>().is_err());
    assert!("a.*.example.com".parse::<HostPattern>().is_err());
}

#[test]
fn patterns_print_as_written_and_round_trip_through_serde() {
    for text in [
        "example.org",
        "*.example.com:8443",
        "10.0.0.5",
        "[::1]:8000",
    ] {
        let p: HostPattern = text.parse().unwrap();
        assert_eq!(p.to_string(), text);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<HostPattern>(&json).unwrap(), p);
    }
    let bad = serde_json::from_str::<HostPattern>("\"exa mple.org\"").unwrap_err();
    assert!(bad.to_string().contains("exa mple.org"), "{bad}");
}

#[test]
fn private_loopback_link_local_and_metadata_addresses_are_not_public() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "::127.0.0.1",
    ] {
        assert!(!is_public(ip.parse().unwrap()), "{ip} counted as public");
    }
    for ip in ["93.184.215.14", "1.1.1.1", "2606:4700::1111"] {
        assert!(is_public(ip.parse().unwrap()), "{ip} counted as private");
    }
}

#[test]
fn a_list_loosens_off_and_on_loosens_a_list_but_not_the_other_way() {
    let list = NetworkAccess::Hosts(policy(&["example.org"], &[]));
    let wider = NetworkAccess::Hosts(policy(&["example.org", "example.net"], &[]));
    assert!(list.loosens(&NetworkAccess::Off));
    assert!(!list.loosens(&NetworkAccess::On));
    assert!(NetworkAccess::On.loosens(&list));
    assert!(!NetworkAccess::Off.loosens(&list));
    assert!(wider.loosens(&list));
    assert!(!list.loosens(&wider));
    let fewer_denies = NetworkAccess::Hosts(policy(&["example.org"], &[]));
    let with_deny = NetworkAccess::Hosts(policy(&["example.org"], &["x.example.org"]));
    assert!(fewer_denies.loosens(&with_deny));
}

#[test]
fn a_star_matches_every_name_but_no_ip_literal_and_never_counts_as_exact() {
    let p = policy(&["*"], &["evil.example"]);
    assert_eq!(
        p.decide(&target("anything.example:443")),
        Decision::Allowed { exact: false }
    );
    assert!(matches!(
        p.decide(&target("evil.example:443")),
        Decision::Denied(_)
    ));
    assert_eq!(p.decide(&target("10.0.0.1:443")), Decision::NotListed);
}

#[test]
fn network_on_with_a_deny_list_becomes_every_name_but_those() {
    let deny: Vec<HostPattern> = vec!["evil.example".parse().unwrap()];
    let NetworkAccess::Hosts(h) = NetworkAccess::On.with_deny(&deny) else {
        panic!("on with a deny list must go through the proxy");
    };
    assert!(matches!(
        h.decide(&target("evil.example:443")),
        Decision::Denied(_)
    ));
    assert_eq!(
        h.decide(&target("ok.example:443")),
        Decision::Allowed { exact: false }
    );
    assert_eq!(NetworkAccess::On.with_deny(&[]), NetworkAccess::On);
    assert_eq!(NetworkAccess::Off.with_deny(&deny), NetworkAccess::Off);
}

#[test]
fn every_built_in_preset_parses() {
    for (name, list) in PRESETS {
        let parsed = preset(name).unwrap_or_else(|| panic!("@{name} does not parse"));
        assert_eq!(parsed.len(), list.len());
    }
    assert!(preset("nope").is_none());
}
