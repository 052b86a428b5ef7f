// The console of `/api/{db}/graphql`: GraphiQL posting its queries to this
// page's own URL, with `Authorization: Bearer` when a token is given. The
// token stays in this tab's sessionStorage only; without one the queries
// run anonymously, as REST reads do.
(function () {
  "use strict";

  var TOKEN_KEY = "eds.graphql.token";
  // the page is served by the endpoint itself; a trailing `/` is ignored there too
  var endpoint = location.pathname.replace(/\/+$/, "");
  var form = document.getElementById("eds-token-form");
  var field = document.getElementById("eds-token");
  var forget = document.getElementById("eds-token-forget");
  var status = document.getElementById("eds-token-status");
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));

  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (blocked) {
      return "";
    }
  }

  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (blocked) {
      // storage refused (a private window's policy): the token lasts until reload
    }
    render(token);
  }

  // Answers the endpoint's JSON whatever the status, so GraphiQL shows a
  // 400 or 401 body in its result pane as it shows `errors`.
  function fetcherWith(token) {
    return function (params) {
      var headers = { "Content-Type": "application/json", Accept: "application/json" };
      if (token) headers.Authorization = "Bearer " + token;
      return fetch(endpoint, {
        method: "POST",
        headers: headers,
        body: JSON.stringify(params),
        credentials: "omit",
      }).then(function (response) {
        return response.text().then(function (text) {
          try {
            return JSON.parse(text);
          } catch (notJson) {
            return { status: response.status, message: text };
          }
        });
      });
    };
  }

  function render(token) {
    status.textContent = token ? "Queries carry this token." : "No token: queries run anonymously.";
    // a new fetcher makes GraphiQL load the schema again, as this caller sees it
    // no headers editor: the token field is the one way to send credentials
    root.render(
      React.createElement(GraphiQL, {
        fetcher: fetcherWith(token),
        isHeadersEditorEnabled: false,
        defaultEditorToolsVisibility: false,
      })
    );
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    storeToken(field.value.trim());
    field.value = "";
  });
  forget.addEventListener("click", function () {
    field.value = "";
    storeToken("");
  });

  render(storedToken());
})();
