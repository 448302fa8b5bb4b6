#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::collections::HashMap;

use std::net::SocketAddr;

use tokio::net::TcpListener;

use super::*;

/// Names of the test's own, all on loopback.
struct Names(HashMap<String, Vec<SocketAddr>>);

#[async_trait::async_trait]
impl Resolve for Names {
    async fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let found = self
            .0
            .get(name)
            .ok_or_else(|| io::Error::other("no such name"))?;
        Ok(found
            .iter()
            .map(|a| SocketAddr::new(a.ip(), port))
            .collect())
    }
}

fn names(list: &[&str]) -> Arc<dyn Resolve> {
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    Arc::new(Names(
        list.iter().map(|n| (n.to_string(), vec![local])).collect(),
    ))
}

fn policy(allow: &[&str], deny: &[&str]) -> HostPolicy {
    HostPolicy {
        allow: allow.iter().map(|p| p.parse().unwrap()).collect(),
        deny: deny.iter().map(|p| p.parse().unwrap()).collect(),
    }
}

/// A server that answers each connection with what it received first
/// (its request head), then closes.
async fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (head, _) = read_head(&mut conn).await.unwrap_or_default();
                let body = String::from_utf8_lossy(&head).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// Send `request` through the proxy; everything it answered.
async fn ask(proxy: &NetProxy, request: &str) -> String {
    let mut conn = UnixStream::connect(proxy.socket()).await.unwrap();
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).to_string()
}

/// CONNECT, then send a request inside the tunnel; everything answered.
async fn tunnel(proxy: &NetProxy, authority: &str) -> String {
    ask(
        proxy,
        &format!(
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\nGET /inside HTTP/1.1\r\n\r\n"
        ),
    )
    .await
}

#[tokio::test]
async fn a_listed_host_is_reached_through_connect_and_the_tunnel_carries_bytes() {
    let port = echo_server().await;
    let proxy = NetProxy::start(
        policy(&[&format!("allowed.test:{port}")], &[]),
        names(&["allowed.test"]),
    )
    .unwrap();
    let out = tunnel(&proxy, &format!("allowed.test:{port}")).await;
    assert!(
        out.starts_with("HTTP/1.1 200 Connection established"),
        "{out}"
    );
    assert!(out.contains("GET /inside HTTP/1.1"), "{out}");
    assert!(proxy.blocked().is_empty());
}

#[tokio::test]
async fn an_unlisted_host_is_refused_with_one_line_and_noted() {
    let port = echo_server().await;
    let proxy = NetProxy::start(
        policy(&[&format!("allowed.test:{port}")], &[]),
        names(&["allowed.test", "other.test"]),
    )
    .unwrap();
    let out = tunnel(&proxy, &format!("other.test:{port}")).await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(!out.contains("/inside"), "{out}");
    let line = format!("rein: network: blocked other.test:{port}: add it to `network` to allow it");
    assert!(out.contains(&line), "{out}");
    assert_eq!(proxy.blocked(), vec![line]);
}

#[tokio::test]
async fn a_listed_name_on_an_unlisted_port_an_ip_literal_and_a_nul_are_refused() {
    let port = echo_server().await;
    let proxy = NetProxy::start(
        policy(&[&format!("allowed.test:{port}")], &[]),
        names(&["allowed.test"]),
    )
    .unwrap();
    for authority in [
        format!("allowed.test:{}", port.wrapping_add(1)),
        format!("127.0.0.1:{port}"),
        format!("allowed.test\0.evil.test:{port}"),
        format!("allowed.test%00:{port}"),
    ] {
        let out = tunnel(&proxy, &authority).await;
        assert!(
            out.starts_with("HTTP/1.1 403") || out.starts_with("HTTP/1.1 400"),
            "{authority:?}: {out}"
        );
        assert!(!out.contains("/inside"), "{authority:?}: {out}");
    }
    // The NUL never parses as a request (a 400 only); the other three are
    // the command's notes.
    assert_eq!(proxy.blocked().len(), 3, "{:?}", proxy.blocked());
}

#[tokio::test]
async fn a_wildcard_never_reaches_a_private_address_but_an_exact_name_may() {
    let port = echo_server().await;
    let proxy = NetProxy::start(
        policy(
            &[
                &format!("*.corp.test:{port}"),
                &format!("dev.corp.test:{port}"),
            ],
            &[],
        ),
        names(&["api.corp.test", "dev.corp.test"]),
    )
    .unwrap();
    let out = tunnel(&proxy, &format!("api.corp.test:{port}")).await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(out.contains("private address"), "{out}");
    let out = tunnel(&proxy, &format!("dev.corp.test:{port}")).await;
    assert!(out.contains("GET /inside"), "{out}");
}

#[tokio::test]
async fn the_deny_list_wins() {
    let port = echo_server().await;
    let proxy = NetProxy::start(
        policy(&[&format!("allowed.test:{port}")], &["allowed.test"]),
        names(&["allowed.test"]),
    )
    .unwrap();
    // The deny entry has no port: it covers 80 and 443 only.
    assert!(
        tunnel(&proxy, &format!("allowed.test:{port}"))
            .await
            .contains("/inside")
    );
    let proxy = NetProxy::start(
        policy(
            &[&format!("allowed.test:{port}")],
            &[&format!("allowed.test:{port}")],
        ),
        names(&["allowed.test"]),
    )
    .unwrap();
    let out = tunnel(&proxy, &format!("allowed.test:{port}")).await;
    assert!(out.contains("network_deny"), "{out}");
}

#[tokio::test]
async fn plain_http_goes_out_in_origin_form_with_the_checked_host_and_no_proxy_headers() {
    let port = echo_server().await;
    let proxy = NetProxy::start(
        policy(&[&format!("allowed.test:{port}")], &[]),
        names(&["allowed.test"]),
    )
    .unwrap();
    let out = ask(
        &proxy,
        &format!(
            "GET http://allowed.test:{port}/simple/pkg/?x=1 HTTP/1.1\r\nHost: evil.test\r\n\
             Proxy-Authorization: Basic c2VjcmV0\r\nAccept: */*\r\n\r\n"
        ),
    )
    .await;
    assert!(out.contains("GET /simple/pkg/?x=1 HTTP/1.1\r\n"), "{out}");
    assert!(
        out.contains(&format!("Host: allowed.test:{port}\r\n")),
        "{out}"
    );
    assert!(!out.contains("evil.test"), "{out}");
    assert!(
        !out.to_ascii_lowercase().contains("proxy-authorization"),
        "{out}"
    );
    assert!(out.contains("Connection: close"), "{out}");
}

#[tokio::test]
async fn requests_that_are_not_proxy_requests_get_a_400() {
    let proxy = NetProxy::start(policy(&["allowed.test"], &[]), names(&[])).unwrap();
    for request in [
        "GET /relative HTTP/1.1\r\n\r\n".to_string(),
        "GET https://allowed.test/ HTTP/1.1\r\n\r\n".to_string(),
        "garbage\r\n\r\n".to_string(),
        format!(
            "GET http://allowed.test/ HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD)
        ),
    ] {
        let out = ask(&proxy, &request).await;
        assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    }
}
