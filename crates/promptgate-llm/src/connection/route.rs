//! How a provider's requests travel: over connections of our own, driven by the reader
//! ([`Http1Client`]), or through an HTTP proxy, which reqwest speaks (a `CONNECT` tunnel for https,
//! `NO_PROXY` honoured).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use http::HeaderMap;
use http::header::HOST;
use http_body_util::Full;

use super::{DrivenBody, Http1Client, SendError};

/// What a provider's response body comes as.
pub(crate) enum ResponseBody {
    Direct(DrivenBody),
    Proxied(Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>),
}

impl Stream for ResponseBody {
    /// A failure is only ever shown, with its causes.
    type Item = Result<Bytes, String>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.get_mut() {
            Self::Direct(body) => Pin::new(body)
                .poll_next(cx)
                .map_err(|e| crate::endpoint::describe(&e)),
            Self::Proxied(body) => body
                .as_mut()
                .poll_next(cx)
                .map_err(|e| crate::endpoint::describe(&e.without_url())),
        }
    }
}

/// One provider's way to its endpoint.
pub(crate) enum Route {
    Direct {
        client: Arc<Http1Client>,
        /// The request target (path and query).
        target: http::Uri,
    },
    Proxied {
        client: reqwest::Client,
        url: url::Url,
    },
}

impl Route {
    /// The route to `url`: through `proxy` when one is given, else direct.
    pub fn new(
        url: &url::Url,
        tls: Option<rustls::ClientConfig>,
        connect_timeout: Duration,
        proxy: Option<&str>,
    ) -> Result<Self, String> {
        let Some(proxy) = proxy else {
            let target = match url.query() {
                Some(query) => format!("{}?{query}", url.path()),
                None => url.path().to_owned(),
            };
            let target = http::Uri::try_from(target).map_err(|e| format!("invalid base URL: {e}"))?;
            let client = Http1Client::new(url, tls, connect_timeout)?;
            return Ok(Self::Direct {
                client: Arc::new(client),
                target,
            });
        };
        // reqwest is built without a TLS crypto provider of its own and panics without one.
        promptgate_outbound::ensure_tls_provider();
        let proxy = reqwest::Proxy::all(proxy)
            .map_err(|e| format!("invalid proxy: {}", crate::endpoint::describe(&e)))?
            .no_proxy(reqwest::NoProxy::from_env());
        let mut builder = reqwest::Client::builder()
            .proxy(proxy)
            .connect_timeout(connect_timeout)
            // A redirect is the caller's to refuse, as on the direct route.
            .redirect(reqwest::redirect::Policy::none());
        if let Some(tls) = tls {
            builder = builder.tls_backend_preconfigured(tls);
        }
        let client = builder.build().map_err(|e| {
            format!(
                "could not build the HTTP client: {}",
                crate::endpoint::describe(&e)
            )
        })?;
        Ok(Self::Proxied {
            client,
            url: url.clone(),
        })
    }

    /// Sends `body` with `headers` (which carry `Host` for the direct route) and waits for the
    /// response head.
    pub async fn send(
        &self,
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<http::Response<ResponseBody>, SendError> {
        match self {
            Self::Direct { client, target } => {
                let mut request = http::Request::new(Full::new(Bytes::from(body)));
                *request.method_mut() = http::Method::POST;
                *request.uri_mut() = target.clone();
                *request.headers_mut() = headers.clone();
                promptgate_outbound::trace_context::inject_headers(request.headers_mut());
                let response = client.send(request).await?;
                Ok(response.map(ResponseBody::Direct))
            }
            Self::Proxied { client, url } => {
                let mut headers = headers.clone();
                // The proxy's request names the destination; reqwest writes `Host` from it.
                headers.remove(HOST);
                promptgate_outbound::trace_context::inject_headers(&mut headers);
                let response = client
                    .post(url.clone())
                    .headers(headers)
                    .body(body)
                    .send()
                    .await
                    .map_err(SendError::from_reqwest)?;
                let mut head = http::Response::new(());
                *head.status_mut() = response.status();
                *head.headers_mut() = response.headers().clone();
                let body = ResponseBody::Proxied(Box::pin(response.bytes_stream()));
                Ok(head.map(|()| body))
            }
        }
    }
}
