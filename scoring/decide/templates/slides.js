(function () {
  var screens = Array.prototype.slice.call(document.querySelectorAll('.screen'));
  var counter = document.getElementById('counter');
  var NEXT = ['ArrowRight', 'ArrowDown', 'PageDown', ' ', 'Enter'], BACK = ['ArrowLeft', 'ArrowUp', 'PageUp', 'Backspace'];
  // A screen is laid out to fit (present.BODY_LINES); should one still overflow its window, its type shrinks until
  // it fits, never below 70%, and says so in data-fit: nothing on it is ever cut off or scrolled away.
  function fit(s) {
    var scale = 1;
    s.style.fontSize = '';
    while (s.scrollHeight > s.clientHeight + 1 && scale > 0.7) {
      scale = Math.round((scale - 0.05) * 100) / 100;
      s.style.fontSize = scale + 'em';
    }
    s.setAttribute('data-fit', String(scale));
  }
  function remember(id) {
    // A file or a served page keeps the screen in its address; a frame's document (about:srcdoc) has none to keep.
    if (location.protocol === 'about:' || location.hash === '#' + id) { return; }
    try { history.replaceState(null, '', '#' + id); } catch (e) { /* an address that cannot hold it */ }
  }
  function show(i) {
    i = Math.max(0, Math.min(screens.length - 1, i));
    screens.forEach(function (s, j) { s.classList.toggle('on', j === i); });
    fit(screens[i]);
    counter.textContent = (i + 1) + ' / ' + screens.length;
    remember(screens[i].id);
    document.body.setAttribute('data-screen', String(i + 1));
  }
  function current() { return screens.findIndex(function (s) { return s.classList.contains('on'); }); }
  document.addEventListener('keydown', function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) { return; }
    var to = NEXT.indexOf(ev.key) >= 0 ? current() + 1 : BACK.indexOf(ev.key) >= 0 ? current() - 1
      : ev.key === 'Home' ? 0 : ev.key === 'End' ? screens.length - 1 : null;
    if (to === null) { return; }
    ev.preventDefault();  // the keys move the slides only: never the page or the page around a frame
    ev.stopPropagation();
    show(to);
  });
  window.addEventListener('resize', function () { fit(screens[current()]); });
  var start = screens.findIndex(function (s) { return '#' + s.id === location.hash; });
  show(start < 0 ? 0 : start);
})();
