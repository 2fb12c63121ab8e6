(function () {
  var screens = Array.prototype.slice.call(document.querySelectorAll('.screen'));
  var counter = document.getElementById('counter');
  function show(i) {
    i = Math.max(0, Math.min(screens.length - 1, i));
    screens.forEach(function (s, j) { s.classList.toggle('on', j === i); });
    counter.textContent = (i + 1) + ' / ' + screens.length;
    if (location.hash !== '#' + screens[i].id) history.replaceState(null, '', '#' + screens[i].id);
    document.body.setAttribute('data-screen', String(i + 1));
  }
  function current() { return screens.findIndex(function (s) { return s.classList.contains('on'); }); }
  document.addEventListener('keydown', function (ev) {
    if (['ArrowRight', 'PageDown', ' ', 'Enter'].indexOf(ev.key) >= 0) { show(current() + 1); ev.preventDefault(); }
    else if (['ArrowLeft', 'PageUp', 'Backspace'].indexOf(ev.key) >= 0) { show(current() - 1); ev.preventDefault(); }
    else if (ev.key === 'Home') { show(0); } else if (ev.key === 'End') { show(screens.length - 1); }
  });
  var start = screens.findIndex(function (s) { return '#' + s.id === location.hash; });
  show(start < 0 ? 0 : start);
})();
