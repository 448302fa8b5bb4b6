use super::*;

#[test]
fn hosts_are_read_from_urls_and_anything_else_is_left_out() {
    let cases = [
        ("https://idx.example/simple/", Some("idx.example")),
        ("sparse+https://index.example/", Some("index.example")),
        (
            "registry+https://user:pw@Mirror.Example:8443/x",
            Some("mirror.example:8443"),
        ),
        ("files.example", Some("files.example")),
        ("/opt/wheels", None),
        ("./wheels", None),
        ("file:///opt/wheels", None),
        ("javascript://x", None),
        ("https://evil.example\u{0}.ok.example/", None),
        ("https://a.example/\nhttps://b.example/", None),
        ("", None),
    ];
    for (item, want) in cases {
        assert_eq!(host_of(item).as_deref(), want, "{item:?}");
    }
}

#[test]
fn patterns_keep_each_host_once_and_drop_what_does_not_parse() {
    let found = [
        "https://idx.example/a".to_string(),
        "https://idx.example/b".to_string(),
        "https://[not a host/".to_string(),
        "https://other.example/".to_string(),
    ];
    let got: Vec<String> = patterns(&found).iter().map(|p| p.to_string()).collect();
    assert_eq!(got, ["idx.example", "other.example"]);
}

#[test]
fn npm_gives_its_registry_and_scoped_ones_only() {
    let json = r#"{"registry": "https://npm.example/", "@corp:registry": "https://npm.corp.example/",
                   "proxy": "http://proxy.example/", "json": true}"#;
    assert_eq!(
        npm_registries(json).unwrap(),
        ["https://npm.example/", "https://npm.corp.example/"]
    );
    assert!(npm_registries("not json").is_err());
    assert!(npm_registries("[1]").is_err());
}

#[test]
fn cargo_gives_the_registries_it_used_and_those_its_home_config_names() {
    let home = tempfile::tempdir().unwrap();
    let index = home.path().join("registry/index");
    std::fs::create_dir_all(index.join("index.cargo.example-1949cf8c6b5b557f")).unwrap();
    std::fs::create_dir_all(index.join("git.corp.example-0123456789abcdef")).unwrap();
    std::fs::write(
        index.join("git.corp.example-0123456789abcdef/config.json"),
        r#"{"dl": "https://dl.corp.example/api/v1/crates", "api": "https://corp.example"}"#,
    )
    .unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[source.crates-io]\nreplace-with = \"mirror\"\n\
         [source.mirror]\nregistry = \"sparse+https://mirror.example/index/\"\n\
         [registries.corp]\nindex = \"https://git.corp.example/index\"\n",
    )
    .unwrap();
    let got: Vec<String> = patterns(&cargo_hosts(home.path()))
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(
        got,
        [
            "git.corp.example",
            "dl.corp.example",
            "corp.example",
            "index.cargo.example",
            "mirror.example",
        ]
    );
    // A config file that is a symlink (to anything) is not read.
    let other = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        home.path().join("config.toml"),
        other.path().join("config.toml"),
    )
    .unwrap();
    assert!(cargo_hosts(other.path()).is_empty());
}

#[test]
fn only_the_three_ecosystems_are_presets_here() {
    for e in Ecosystem::ALL {
        assert_eq!(Ecosystem::from_name(e.name()), Some(e));
    }
    assert!(preset("github").is_none());
    assert!(preset("corp").is_none());
}
