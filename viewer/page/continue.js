// The token exchange's page: on to the viewer, keeping the route the link
// named (its #fragment), which the server never sees. Only a route of the
// viewer's own form is kept.
'use strict';
(function () {
  const h = location.hash;
  location.replace('/' + (/^#\/[A-Za-z0-9\-_/?=&%.,:+]*$/.test(h) ? h : ''));
})();
