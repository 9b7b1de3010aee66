// A tap shows what a hover shows: a phone has no pointer to hover with, so tapping (or clicking)
// a chart's point, bar or line writes its hover text (its <title>) in a box under the chart,
// where it stays until another target or anything outside the chart is tapped.
(function () {
    'use strict';
    function tipOf(figure) {
        let tip = figure.querySelector(':scope > .lecture-chart-tip');
        if (!tip) {
            tip = document.createElement('p');
            tip.className = 'lecture-chart-tip';
            tip.setAttribute('role', 'status');
            tip.hidden = true;
            figure.insertBefore(tip, figure.querySelector(':scope > figcaption'));
        }
        return tip;
    }
    document.addEventListener('click', event => {
        const target = event.target.closest && event.target.closest('.lecture-chart-hover > *');
        for (const tip of document.querySelectorAll('.lecture-chart-tip')) {
            tip.hidden = true;
        }
        if (!target) {
            return;
        }
        const title = target.querySelector(':scope > title');
        const figure = target.closest('figure.lecture-chart');
        if (!title || !figure) {
            return;
        }
        const tip = tipOf(figure);
        tip.textContent = title.textContent;
        tip.hidden = false;
    });
})();
