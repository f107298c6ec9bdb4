"""The app starts, the browser connects, the first run ends without an exception, the title shows."""

from devkit.browser import open_app


def test_app_shows_title(app_server, page):
    open_app(page, app_server)
    title = page.get_by_text("TF Fusion Explorer", exact=True).first
    title.wait_for(state="visible")
    assert title.is_visible()
    assert page.locator("[data-testid='stException']").count() == 0
