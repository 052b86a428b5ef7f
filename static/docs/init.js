// Renders the service's own document; relative URLs keep the page working
// behind a path prefix, and no validator badge means no outside request.
window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "api/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
};
