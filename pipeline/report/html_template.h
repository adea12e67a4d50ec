// The HTML report's page: styles and script inline, the data (html_report.cpp) replaces
// the /*PERFSIFT_DATA*/ marker. No network fetches. The script sets body data
// attributes a browser test reads: data-rendered="ok", data-errors (script errors),
// data-highlighted (timeline calls lit by the last clicked finding), data-render-ms (from
// navigation start until drawn).
#pragma once

namespace perfsift::pipeline {

inline constexpr const char *kHtmlTemplate = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>perfsift report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px;margin:6px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4}tr.sel{background:#fff3c4}#findings tbody tr{cursor:pointer}#findings tbody tr:hover{background:#eef}
.num{text-align:right;font-variant-numeric:tabular-nums}.note{color:#666;font-size:12px}.warn{color:#a40}
svg text{font:10px sans-serif}canvas{border:1px solid #ddd}
.tl{border:1px solid #ccc;overflow:hidden;cursor:grab;background:#fff}
.tl rect.mpi{fill:#e8734a}.tl rect.startup{fill:#c8c8c8}.tl rect.wait{fill:#d33}.tl rect.hl{stroke:#06f;stroke-width:2}.tl rect.dom{stroke:#000;stroke-width:2}
.tl line.msg{stroke:#333;stroke-opacity:.35;stroke-width:.6}
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}select{margin:0 6px}
.row{display:flex;gap:24px;flex-wrap:wrap}.answer{font-size:16px;border-left:4px solid #d33;padding:4px 10px;margin:8px 0;background:#fff6f3;max-width:75em}
.answer p{margin:4px 0;white-space:normal}.answer ul{margin:4px 0}.absent{color:#555;font-style:italic}
svg.matrix text{font:11px sans-serif;fill:#333}svg.matrix text.axis{font-weight:bold}svg.matrix image{image-rendering:pixelated}
</style></head>
<body data-rendered="no" data-errors="0" data-highlighted="0">
<h1>perfsift report</h1><div id="answer" class="answer"></div><div id="run"></div><div id="efficiency"></div><div id="absent"></div>
<h2>Findings, ranked</h2><div class="note">Click a finding to light its region and ranks in the timelines. lost = time at stake; gain = simulated payoff of the fix (what-if replay).</div><div id="findings"></div>
<h2>Timelines: measured run and prediction</h2><div id="timeline"></div>
<h2>MPI operations by time</h2><div id="operations"></div>
<h2>Per rank (RPPA's views)</h2><div id="rppa"></div>
<h2>Rank &times; region heatmap</h2><div id="heatmap"></div>
<h2>Rank clusters</h2><div id="clusters"></div>
<h2>Communication matrix (bytes, sender &times; receiver)</h2><div id="comm"></div>
<h2>Model diagnosis</h2><div id="diagnosis"></div>
<h2>Tables</h2><div id="tables"></div>
<h2>Text report</h2><details><summary>as printed by perfsift analyze</summary><pre id="text"></pre></details>
<script type="application/json" id="data">/*PERFSIFT_DATA*/</script>
<script>
"use strict";
window.onerror=function(){document.body.dataset.errors=String(+document.body.dataset.errors+1)};
const D=JSON.parse(document.getElementById("data").textContent);
const $=id=>document.getElementById(id);
const esc=s=>String(s).replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"})[c]);
function fmt(s){if(s===null||s===undefined||Number.isNaN(s))return "n/a";const a=Math.abs(s);
 return a>=100?s.toFixed(0)+" s":a>=1?s.toFixed(2)+" s":a>=1e-3?(s*1e3).toFixed(1)+" ms":(s*1e6).toFixed(0)+" us"}
function num(v){return typeof v==="number"?(Number.isInteger(v)?String(v):v.toPrecision(4)):esc(v)}
function table(t,cls){let h="<table"+(cls?' class="'+cls+'"':"")+"><thead><tr>"+t.columns.map(c=>"<th>"+esc(c)+"</th>").join("")+"</tr></thead><tbody>";
 for(const r of t.rows)h+="<tr>"+r.map(v=>'<td class="'+(typeof v==="number"?"num":"")+'">'+num(v)+"</td>").join("")+"</tr>";
 h+="</tbody></table>";if(t.total>t.rows.length)h+='<div class="note">'+t.rows.length+" of "+t.total+" rows; the rest is in the results file</div>";return h}
function parseRanks(s){const out=new Set();for(const p of String(s).split(",")){if(p==="all"){for(let r=0;r<D.run.ranks;r++)out.add(r);continue}
 const m=p.match(/^(\d+)(?:-(\d+))?$/);if(m){for(let r=+m[1];r<=+(m[2]||m[1]);r++)out.add(r)}}return out}
function rgb(x){x=Math.max(0,Math.min(1,x));return [Math.round(255*Math.min(1,2*x)),Math.round(255*Math.min(1,2*(1-x))*0.85+30),60]}
function color(x){return "rgb("+rgb(x).join(",")+")"}
function svgEl(tag,attrs){const e=document.createElementNS("http://www.w3.org/2000/svg",tag);for(const k in attrs)e.setAttribute(k,attrs[k]);return e}
function bars(values,labels,title,unit){const w=Math.max(300,Math.min(1300,values.length*14+60)),h=160,max=Math.max(1e-30,...values.filter(Number.isFinite));
 const mean=values.filter(Number.isFinite).reduce((a,b)=>a+b,0)/Math.max(1,values.filter(Number.isFinite).length);
 const s=svgEl("svg",{width:w,height:h+30});const bw=(w-50)/values.length;
 values.forEach((v,i)=>{if(!Number.isFinite(v))return;const bh=v/max*h;const r=svgEl("rect",{x:45+i*bw,y:h-bh+10,width:Math.max(1,bw-1),height:bh,fill:"#4a7ee8"});
  const t=svgEl("title",{});t.textContent=labels[i]+": "+(unit==="s"?fmt(v):v.toPrecision(4)+" "+unit);r.appendChild(t);s.appendChild(r)});
 const y=h-mean/max*h+10;s.appendChild(svgEl("line",{x1:45,x2:w,y1:y,y2:y,stroke:"#c00","stroke-dasharray":"4 3"}));
 const tx=svgEl("text",{x:2,y:12});tx.textContent=unit==="s"?fmt(max):max.toPrecision(3);s.appendChild(tx);
 const t2=svgEl("text",{x:45,y:h+24});t2.textContent=title+" (dashed: mean over ranks; hover a bar for its value)";s.appendChild(t2);return s}

function fmtBytes(b){const u=["B","kB","MB","GB","TB"];let i=0;while(b>=1000&&i<u.length-1){b/=1000;i++}return (i?b.toPrecision(3):String(Math.round(b)))+" "+u[i]}
function clipLabel(s,n){s=String(s);return s.length>n?"\u2026"+s.slice(s.length-n+1):s}
// A matrix drawn at a readable size: the cells (a canvas shown through an SVG image), both
// axes titled, tick labels thinned so that none overlaps, and a colour legend with units.
// o: {name, rows, cols (labels), rowTitle, colTitle, cell(i,j): 0..1 or null, empty (colour
// of a null cell), legend: {title, ticks: [[0..1, label]]}, hover(i,j): text, square}
function matrixChart(host,o){const R=o.rows.length,C=o.cols.length;if(!R||!C){host.insertAdjacentHTML("beforeend",'<div class="note">no rows or columns to draw</div>');return null}
 const avail=Math.max(600,Math.min(1360,host.clientWidth||1200));
 const rl=Math.min(12,Math.max(...o.rows.map(x=>String(x).length))),cl=Math.min(28,Math.max(...o.cols.map(x=>String(x).length)));
 const L=34+rl*7,LG=190;let PW=Math.max(400,Math.min(avail-L-LG,C*28)),PH=Math.max(160,Math.min(640,R*28));
 if(o.square)PW=PH=Math.max(360,Math.min(640,avail-L-LG,R*28));
 const cw=PW/C,rh=PH/R,flat=cl<=10||cl*6.5+8<=cw,B=flat?40:Math.round(cl*6.5*0.72)+40,T=10;
 const s=svgEl("svg",{width:L+PW+LG,height:T+PH+B,class:"matrix","data-chart":o.name});
 const cv=document.createElement("canvas");cv.width=C;cv.height=R;const g=cv.getContext("2d"),img=g.createImageData(C,R);
 g.fillStyle=o.empty;g.fillRect(0,0,1,1);const none=g.getImageData(0,0,1,1).data;
 for(let i=0;i<R;i++)for(let j=0;j<C;j++){const v=o.cell(i,j),c=v===null?none:rgb(v),k=4*(i*C+j);img.data[k]=c[0];img.data[k+1]=c[1];img.data[k+2]=c[2];img.data[k+3]=255}
 g.putImageData(img,0,0);
 s.appendChild(svgEl("image",{x:L,y:T,width:PW,height:PH,preserveAspectRatio:"none",href:cv.toDataURL()}));
 s.appendChild(svgEl("rect",{x:L,y:T,width:PW,height:PH,fill:"none",stroke:"#888",class:"plot"}));
 const text=(x,y,t,cls,extra)=>{const e=svgEl("text",Object.assign({x:x,y:y,class:cls},extra||{}));e.textContent=t;s.appendChild(e);return e};
 const rstep=Math.ceil(13/rh),cstep=Math.ceil((flat?cl*6.5+8:18)/cw);
 for(let i=0;i<R;i+=rstep)text(L-4,T+(i+0.5)*rh+4,clipLabel(o.rows[i],12),"tick tick-row",{"text-anchor":"end"});
 for(let j=0;j<C;j+=cstep){const x=L+(j+0.5)*cw,y=T+PH+12;
  if(flat)text(x,y,clipLabel(o.cols[j],28),"tick tick-col",{"text-anchor":"middle"});
  else text(x,y,clipLabel(o.cols[j],28),"tick tick-col",{"text-anchor":"end",transform:"rotate(-40 "+x+" "+(y-8)+")"})}
 text(12,T+PH/2,o.rowTitle,"axis axis-row",{"text-anchor":"middle",transform:"rotate(-90 12 "+(T+PH/2)+")"});
 text(L+PW/2,T+PH+B-6,o.colTitle,"axis axis-col",{"text-anchor":"middle"});
 // The legend: the colour scale bottom (low) to top (high), its ticks and its units.
 const words=o.legend.title.split(" "),tl=[""];for(const w of words){if(tl[tl.length-1]&&(tl[tl.length-1]+" "+w).length>24)tl.push("");tl[tl.length-1]+=(tl[tl.length-1]?" ":"")+w}
 const lx=L+PW+24,ly=T+6+13*tl.length,lh=Math.min(PH-ly+T,220),leg=svgEl("g",{class:"legend"});s.appendChild(leg);
 for(let k=0;k<40;k++)leg.appendChild(svgEl("rect",{x:lx,y:ly+lh*(39-k)/40,width:14,height:lh/40+0.5,fill:color(k/39)}));
 leg.appendChild(svgEl("rect",{x:lx,y:ly,width:14,height:lh,fill:"none",stroke:"#888",class:"scale"}));
 const lt=text(lx,T+8,"","axis legend-title");tl.forEach((l,k)=>{const t=svgEl("tspan",{x:lx,dy:k?13:0});t.textContent=l;lt.appendChild(t)});leg.appendChild(lt);
 for(const [f,label] of o.legend.ticks){const y=ly+lh*(1-f);leg.appendChild(svgEl("line",{x1:lx+14,x2:lx+18,y1:y,y2:y,stroke:"#888"}));leg.appendChild(text(lx+21,y+4,label,"legend-tick"))}
 if(o.legend.empty){const y=ly+lh+10;leg.appendChild(svgEl("rect",{x:lx,y:y,width:14,height:10,fill:o.empty,stroke:"#888"}));leg.appendChild(text(lx+21,y+9,o.legend.empty,"legend-tick"))}
 const info=document.createElement("div");info.className="note";info.textContent=o.note||"hover a cell";
 s.addEventListener("mousemove",ev=>{const r=s.querySelector("rect.plot").getBoundingClientRect(),j=Math.floor((ev.clientX-r.left)/r.width*C),i=Math.floor((ev.clientY-r.top)/r.height*R);
  if(i>=0&&i<R&&j>=0&&j<C)info.textContent=o.hover(i,j)});
 host.appendChild(s);host.appendChild(info);return s}

// ---- run
(function(){const r=D.run;$("run").innerHTML="<b>"+esc(r.command)+"</b><br>"+r.ranks+" ranks, "+
 (r.startup_s>0||r.shutdown_s>0?fmt(r.program_s)+" program (start-up "+fmt(r.startup_s)+" and shut-down "+fmt(r.shutdown_s)+" not counted; "+fmt(r.wall_s)+" wall)":fmt(r.wall_s)+" wall")+", started "+esc(r.start)+
 "<br>trace store "+esc(r.store)+", results "+esc(r.results)+(r.rank_block>1?'<br><span class="note">ranks are shown in blocks of '+r.rank_block+"</span>":"")+
 r.warnings.map(w=>'<div class="warn">warning: '+esc(w)+"</div>").join("")})();
// ---- POP efficiencies: each factor, and the problem costing it most when below 0.8
(function(){const e=D.efficiency;if(!e)return;const v=x=>x===null||x===undefined||Number.isNaN(x)?"n/a":Number(x).toFixed(2);
 let h='<table id="pop"><thead><tr><th>POP efficiency</th><th>value</th><th>costs it most</th></tr></thead><tbody>';
 for(const f of e.factors)h+="<tr"+(f.value!==null&&f.value<e.acceptable?' class="sel"':"")+"><td>"+esc(f.label)+"</td><td>"+v(f.value)+"</td><td>"+esc(f.problem||"")+"</td></tr>";
 h+="</tbody></table>";if(e.regions.length){h+='<table id="pop-regions"><thead><tr><th>region</th><th>load balance</th><th>communication</th><th>parallel</th></tr></thead><tbody>';
 for(const r of e.regions)h+="<tr><td>"+esc(r[0])+"</td><td>"+v(r[1])+"</td><td>"+v(r[2])+"</td><td>"+v(r[3])+"</td></tr>";h+="</tbody></table>"}
 $("efficiency").innerHTML=h+(e.note?'<div class="note">'+esc(e.note)+"</div>":"")})();
// ---- views not drawn, and why (the stages that produce them did not run)
const A=D.absent||{};
const absentNote=(host,key)=>{$(host).innerHTML='<div class="absent" data-absent="'+esc(key)+'">'+esc(A[key])+"</div>"};
const N=D.none||{};
(function(){const keys=Object.keys(A),extra=(D.tables_absent||[]).map(t=>t.title+": "+t.why),nr=D.stages_not_run||[];
 if(!keys.length&&!extra.length&&!nr.length)return;
 $("absent").innerHTML='<div class="note" id="stages">stages run: '+esc((D.stages_run||[]).join(", ")||"none")+
  (nr.length?"; not run: "+esc(nr.join(", "))+" (add them to pipeline.stages for their views and findings)":"")+"</div>"+
  (keys.length||extra.length?"<details open><summary>"+(keys.length+extra.length)+(keys.length+extra.length==1?" view absent":" views absent")+"</summary><ul>"+keys.map(k=>'<li class="absent">'+esc(A[k])+"</li>").join("")+extra.map(t=>'<li class="absent">'+esc(t)+"</li>").join("")+"</ul></details>":"")})();

// ---- the answer first (composed by the report, as text)
// Each line of D.answer is a paragraph (or a list item: "- ..."), reflowed to the page's width.
(function(){const h=$("answer");let list=null;for(const raw of D.answer||[]){const l=String(raw).trim();if(!l)continue;
 if(/^[-*] /.test(l)){if(!list){list=document.createElement("ul");h.appendChild(list)}const li=document.createElement("li");li.textContent=l.slice(2);list.appendChild(li);continue}
 list=null;const p=document.createElement("p");p.textContent=l;h.appendChild(p)}})();
// ---- findings
const F=D.findings, fc=n=>F.columns.indexOf(n);
(function(){let h='<table id="findings"><thead><tr><th>#</th><th>kind</th><th>where</th><th>ranks</th><th>lost</th><th>gain</th><th>why</th><th>stage</th></tr></thead><tbody>';
 F.rows.forEach((r,i)=>{h+='<tr data-i="'+i+'"><td>'+(i+1)+"</td><td>"+esc(r[fc("kind")])+"</td><td>"+esc(r[fc("where")])+'</td><td title="'+esc(r[fc("ranks")])+'">'+esc(String(r[fc("ranks")]).length>60?String(r[fc("ranks")]).slice(0,57)+"...":r[fc("ranks")])+
  '</td><td class="num">'+fmt(r[fc("lost_s")])+'</td><td class="num">'+fmt(r[fc("predicted_gain_s")])+"</td><td>"+esc(r[fc("cause")])+"</td><td>"+esc(r[fc("stage")])+"</td></tr>"});
 $("findings").innerHTML=(F.rows.length?h+"</tbody></table>":"No findings crossed the reporting thresholds.")+(A.gain?'<div class="absent">'+esc(A.gain)+"</div>":"");
 for(const tr of document.querySelectorAll("#findings tbody tr"))tr.addEventListener("click",()=>selectFinding(+tr.dataset.i))})();

// ---- timelines
const T=D.timeline||{absent:"no timeline: the results file has none"};const views=[];
let view=null;
function Timeline(host,qid,label){this.q=qid;const ev=T.events[String(qid)]||[];this.ev=ev;this.label=label;
 this.byKey=new Map();ev.forEach((e,i)=>this.byKey.set(e[0]+":"+e[1],i));
 let t0=Infinity,t1=-Infinity;for(const e of ev){t0=Math.min(t0,e[2]);t1=Math.max(t1,e[3])}this.t0=t0;this.t1=t1;
 this.ranks=D.run.ranks;this.lane=Math.max(6,Math.min(18,Math.floor(420/Math.max(1,this.ranks))));
 const w=host.clientWidth||1200;this.w=w;this.h=this.lane*this.ranks+20;
 this.svg=svgEl("svg",{width:w,height:this.h,class:"tl"});host.appendChild(this.svg);this.hl=new Set();this.dom=new Set()}
Timeline.prototype.draw=function(){const s=this.svg;while(s.firstChild)s.removeChild(s.firstChild);
 const a=view.a,b=view.b,sc=(this.w-40)/(b-a),L=this.lane;const x=t=>40+(t-a)*sc;
 for(let r=0;r<this.ranks;r++){const t=svgEl("text",{x:2,y:r*L+L-1});t.textContent=String(r);s.appendChild(t)}
 let lit=0;this.ev.forEach((e,i)=>{if(e[3]<a||e[2]>b)return;const key=e[0]+":"+e[1];
  const c=(this.hl.has(i)?" hl":"")+(this.dom.has(key)?" dom":"")+((T.lifecycle_ops||[])[e[4]]?" startup":"");if(this.hl.has(i))lit++;
  const r=svgEl("rect",{x:x(e[2]),y:e[0]*L+2,width:Math.max(0.6,(e[3]-e[2])*sc),height:L-3,class:"mpi"+c});
  const t=svgEl("title",{});t.textContent="rank "+e[0]+" call "+e[1]+": "+(T.ops[e[4]]||"?")+" in "+(T.regions[e[5]]||"?")+", "+fmt((e[3]-e[2])*1e-9);r.appendChild(t);s.appendChild(r)});
 if(T.messages)for(const m of T.messages){const i=this.byKey.get(m[0]+":"+m[1]),j=this.byKey.get(m[2]+":"+m[3]);if(i===undefined||j===undefined)continue;
  const e=this.ev[i],f=this.ev[j];if(Math.max(e[2],f[3])<a||Math.min(e[2],f[3])>b)continue;
  s.appendChild(svgEl("line",{x1:x(e[2]),y1:e[0]*L+L/2,x2:x(f[3]),y2:f[0]*L+L/2,class:"msg"}))}
 const t=svgEl("text",{x:40,y:this.h-4});t.textContent=this.label+": "+fmt((a-view.a0)*1e-9)+" to "+fmt((b-view.a0)*1e-9)+" (wheel: zoom, drag: pan)";s.appendChild(t);return lit};
function redraw(){let lit=0;for(const v of views)lit+=v.draw();return lit}
(function(){const host=$("timeline");
 if(T.absent){host.innerHTML='<div class="absent" data-absent="timeline">'+esc(T.absent)+"</div>";return}
 if(T.binned){host.innerHTML='<div class="note" id="binned-note">'+T.calls.toLocaleString("en")+" calls are too many to draw one by one: the share of time in MPI per rank and time bin.</div>";
  for(const q of T.questions){const b=T.binned[String(q.id)],cols=b.share[0].length,bin=(b.t1-b.t0)/cols;
   const d=document.createElement("div");d.innerHTML="<b>"+esc(q.label)+"</b> ("+fmt((b.t1-b.t0)*1e-9)+")";host.appendChild(d);
   matrixChart(host,{name:"binned-"+(q.id<0?"measured":q.id),rows:D.rank_labels.slice(0,b.share.length),cols:b.share[0].map((_,j)=>fmt(j*bin*1e-9)),
    rowTitle:"rank",colTitle:"time since the first call",cell:(i,j)=>b.share[i][j]/100,empty:"#fff",
    legend:{title:"time in MPI (%)",ticks:[[0,"0 %"],[0.5,"50 %"],[1,"100 %"]]},
    hover:(i,j)=>"rank "+D.rank_labels[i]+", "+fmt(j*bin*1e-9)+" to "+fmt((j+1)*bin*1e-9)+": "+b.share[i][j]+" % in MPI"})}return}
 const ctl=document.createElement("div");ctl.innerHTML='Prediction: <select id="tlq"></select> <span class="note">'+(T.domino_absent?esc(T.domino_absent):"black outline: the domino path (PerWiz)")+'; message lines join each send to the call that completed its receive</span>';host.appendChild(ctl);
 const sel=ctl.querySelector("select");for(const q of T.questions)if(q.id>=0){const o=document.createElement("option");o.value=q.id;o.textContent=q.label;sel.appendChild(o)}
 const m=T.questions.find(q=>q.id<0),p=T.questions.find(q=>q.id>=0);
 const mh=document.createElement("div"),ph=document.createElement("div");host.appendChild(mh);host.appendChild(ph);
 let a0=Infinity,b0=-Infinity;for(const k in T.events)for(const e of T.events[k]){a0=Math.min(a0,e[2]);b0=Math.max(b0,e[3])}
 // The program proper fills the view; start-up is folded to the left (drag or zoom out to see it)
 const ps=D.run.program_start_s*1e9;view={a:ps>a0&&ps<b0?ps:a0,b:b0,a0:a0};
 if(m)views.push(new Timeline(mh,m.id,"measured run"));
 const makePred=id=>{ph.innerHTML="";const q=T.questions.find(x=>x.id===id);const v=new Timeline(ph,id,"predicted: "+q.label);
  if(id===0&&T.domino)for(const d of T.domino)v.dom.add(d[0]+":"+d[1]);return v};
 if(p){views.push(makePred(p.id));sel.onchange=()=>{views.pop();views.push(makePred(+sel.value));applyHighlight();redraw()}}
 for(const v of views){let drag=null;
  v.svg.addEventListener("wheel",ev=>{ev.preventDefault();const r=v.svg.getBoundingClientRect();const f=(ev.clientX-r.left-40)/(v.w-40);
   const t=view.a+f*(view.b-view.a),k=ev.deltaY<0?0.8:1.25;view.a=t-(t-view.a)*k;view.b=t+(view.b-t)*k;redraw()},{passive:false});
  v.svg.addEventListener("mousedown",ev=>{drag={x:ev.clientX,a:view.a,b:view.b}});
  window.addEventListener("mouseup",()=>{drag=null});
  v.svg.addEventListener("mousemove",ev=>{if(!drag)return;const d=(ev.clientX-drag.x)/(v.w-40)*(drag.b-drag.a);view.a=drag.a-d;view.b=drag.b-d;redraw()})}
 redraw()})();
let selected=-1;
// The calls of a finding: on its ranks, in its region (the part of "where" before " >"),
// else in the nearest enclosing region that has calls (computation-only regions have
// none), else all of the ranks' calls.
function regionMatcher(where){const all=views.flatMap(v=>v.ev);let p=where.split(" >")[0];
 while(p){const q=p,m=path=>path===q||path.startsWith(q+"/");if(all.some(e=>m(T.regions[e[5]]||"")))return m;const i=p.lastIndexOf("/");p=i>0?p.slice(0,i):""}
 return ()=>true}
function applyHighlight(){if(selected<0||!T.events)return;const r=F.rows[selected],ranks=parseRanks(r[fc("ranks")]),inRegion=regionMatcher(String(r[fc("where")]));
 for(const v of views){v.hl=new Set();v.ev.forEach((e,i)=>{if(ranks.has(e[0])&&inRegion(T.regions[e[5]]||""))v.hl.add(i)})}}
function selectFinding(i){selected=i;for(const tr of document.querySelectorAll("#findings tbody tr"))tr.classList.toggle("sel",+tr.dataset.i===i);
 applyHighlight();const lit=views.length?redraw():0;document.body.dataset.highlighted=String(lit);
 if(views.length)$("timeline").scrollIntoView({block:"start"})}

// ---- MPI operations, start-up and shut-down apart (not the program's communication)
(function(){const O=D.operations;if(!O){absentNote("operations","operations");return}
 let h=table({columns:["operation","calls","time per rank","share of the program's MPI time"],rows:O.program.map(o=>[o[0],o[1],fmt(o[2]),(100*o[3]).toFixed(1)+" %"]),total:O.program.length});
 if(O.lifecycle.length)h+='<div class="note" id="lifecycle-ops">start-up and shut-down, per rank and not in the shares: '+O.lifecycle.map(o=>esc(o[0])+" "+fmt(o[2])).join(", ")+"</div>";
 $("operations").innerHTML=h})();
// ---- RPPA's views
(function(){if(!D.rank_region_wall_s){absentNote("rppa","rppa");return}const host=$("rppa");
 const RW=D.rank_region_wall_s,C=D.rank_op_calls,B=D.rank_op_bytes,labels=D.rank_labels;
 host.innerHTML='<div>Region <select id="rg"></select> Operation <select id="op"></select> Rank <select id="rk"></select></div><div id="rv"></div>';
 const rg=$("rg"),op=$("op"),rk=$("rk");RW.cols.forEach((c,i)=>rg.add(new Option(c,i)));op.add(new Option("all operations",-1));C.cols.forEach((c,i)=>op.add(new Option(c,i)));labels.forEach((l,i)=>rk.add(new Option(l,i)));
 const sum=(row,k)=>k<0?row.reduce((a,b)=>a+(Number.isFinite(b)?b:0),0):row[k];
 const draw=()=>{const out=$("rv");out.innerHTML="";const g=+rg.value,o=+op.value,k=+rk.value;
  const add=(t,e)=>{const d=document.createElement("div");d.innerHTML="<div><b>"+t+"</b></div>";d.appendChild(e);out.appendChild(d)};
  const mean=j=>RW.rows.reduce((a,r)=>a+(Number.isFinite(r[j])?r[j]:0),0)/RW.rows.length;
  const cmp=(rows,cols,unit,title)=>{const d=document.createElement("table");let h="<tr><th>"+title+"</th><th>rank "+esc(labels[k])+"</th><th>mean of ranks</th><th>ratio</th></tr>";
   cols.forEach((c,j)=>{const v=rows[k][j],m=rows.reduce((a,r)=>a+(Number.isFinite(r[j])?r[j]:0),0)/rows.length;if(!(v>0||m>0))return;
    h+="<tr><td>"+esc(c)+'</td><td class="num">'+(unit==="s"?fmt(v):num(v))+'</td><td class="num">'+(unit==="s"?fmt(m):num(m))+'</td><td class="num">'+(m>0?(v/m).toFixed(2):"-")+"</td></tr>"});d.innerHTML=h;return d};
  // RPPA's seven views: 1-3 one process, 4-6 compared across processes, 7 the space-time diagram.
  const row=document.createElement("div");row.className="row";
  for(const [t,e] of [["1. Region running time of rank "+esc(labels[k]),cmp(RW.rows,RW.cols,"s","region")],
                      ["2. Calls of rank "+esc(labels[k]),cmp(C.rows,C.cols,"","operation")],
                      ["3. Communication volume of rank "+esc(labels[k]),cmp(B.rows,B.cols,"","operation")]]){const d=document.createElement("div");d.innerHTML="<div><b>"+t+"</b></div>";d.appendChild(e);row.appendChild(d)}
  out.appendChild(row);
  add("4. Region running time compared across ranks: "+esc(RW.cols[g]),bars(RW.rows.map(r=>r[g]),labels,"inclusive wall time per rank","s"));
  add("5. Calls compared across ranks: "+esc(o<0?"all operations":C.cols[o]),bars(C.rows.map(r=>sum(r,o)),labels,"MPI calls per rank","calls"));
  add("6. Communication volume compared across ranks: "+esc(o<0?"all operations":B.cols[o]),bars(B.rows.map(r=>sum(r,o)),labels,"bytes moved per rank","B"));
  const d7=document.createElement("div");d7.innerHTML='<b>7. Space-time diagram</b>: <a href="#timeline">the timelines above</a>';out.appendChild(d7)};
 rg.onchange=op.onchange=rk.onchange=draw;rg.value=Math.min(1,RW.cols.length-1);draw()})();

// ---- heatmap
(function(){const host=$("heatmap");const M=D.rank_region_wall_s;if(!M){absentNote("heatmap","heatmap");return}
 const rows=M.rows.length,cols=M.cols.length,mx=[];let all=0;
 for(let j=0;j<cols;j++){let m=0;for(const r of M.rows)if(Number.isFinite(r[j]))m=Math.max(m,r[j]);mx.push(m);all=Math.max(all,m)}
 const ctl=document.createElement("div");ctl.innerHTML='Colour: <select><option value="region">share of the region\'s slowest rank</option><option value="s">seconds, one scale for all regions</option></select>';
 const fig=document.createElement("div");host.appendChild(ctl);host.appendChild(fig);const sel=ctl.querySelector("select");
 const draw=()=>{fig.innerHTML="";const rel=sel.value==="region";
  matrixChart(fig,{name:"heatmap",rows:D.rank_labels,cols:M.cols,rowTitle:"rank",colTitle:"region (inclusive wall time)",empty:"#ccc",
   cell:(i,j)=>{const v=M.rows[i][j];return Number.isFinite(v)?(rel?(mx[j]>0?v/mx[j]:0):(all>0?v/all:0)):null},
   legend:rel?{title:"% of the region's slowest rank",ticks:[[0,"0 %"],[0.5,"50 %"],[1,"100 %"]],empty:"no data"}
             :{title:"inclusive wall time (s)",ticks:[[0,fmt(0)],[0.5,fmt(all/2)],[1,fmt(all)]],empty:"no data"},
   hover:(i,j)=>"rank "+D.rank_labels[i]+", "+M.cols[j]+": "+fmt(M.rows[i][j])+(mx[j]>0&&Number.isFinite(M.rows[i][j])?" ("+Math.round(100*M.rows[i][j]/mx[j])+" % of the slowest rank's "+fmt(mx[j])+")":"")})};
 sel.onchange=draw;draw()})();

// ---- clusters, communication matrix, diagnosis, tables, text
(function(){const c=D.clusters;if(!c){if(N.clusters)$("clusters").innerHTML='<div class="note">'+esc(N.clusters)+"</div>";else absentNote("clusters","clusters");return}$("clusters").innerHTML=table({columns:["cluster","size","ranks"],rows:c.map(x=>[x.cluster,x.size,x.ranks]),total:c.length})})();
(function(){const host=$("comm");if(!D.comm){absentNote("comm","comm");return}
 const n=D.rank_labels.length,cells=new Map();let mx=1;for(const c of D.comm){cells.set(c[0]*n+c[1],c);mx=Math.max(mx,c[3])}
 const scale=v=>Math.log1p(v)/Math.log1p(mx);
 matrixChart(host,{name:"comm",rows:D.rank_labels,cols:D.rank_labels,rowTitle:"sender rank",colTitle:"receiver rank",square:true,empty:"#fff",
  cell:(i,j)=>{const c=cells.get(i*n+j);return c?scale(c[3]):null},
  legend:{title:"bytes sent (log scale)",ticks:[[scale(1),fmtBytes(1)],[0.5,fmtBytes(Math.expm1(0.5*Math.log1p(mx)))],[1,fmtBytes(mx)]],empty:"none"},
  note:D.comm.length+" communicating pairs; hover a cell",
  hover:(i,j)=>{const c=cells.get(i*n+j);return D.rank_labels[i]+" -> "+D.rank_labels[j]+": "+(c?c[2]+" messages, "+fmtBytes(c[3]):"nothing")}})})();
(function(){const d=D.diagnosis;if(!d){absentNote("diagnosis","diagnosis");return}$("diagnosis").innerHTML=d.model==="none"?"No master-worker, wavefront or divide-and-conquer structure recognised.":"<pre>"+esc(d.narrative)+"</pre>"})();
(function(){$("tables").innerHTML=D.tables.map(t=>"<h3>"+esc(t.title)+' <span class="note">'+esc(t.hdf5)+"</span></h3>"+table(t.table)).join("")+
 (D.tables_none||[]).map(t=>'<div class="note">'+esc(t.title)+": "+esc(t.why)+"</div>").join("")+
 (D.tables_absent||[]).map(t=>'<div class="absent">'+esc(t.title)+": "+esc(t.why)+"</div>").join("")||"none";$("text").textContent=D.text_report})();

document.body.dataset.renderMs=String(Math.round(performance.now()));
document.body.dataset.rendered="ok";
</script></body></html>
)HTML";

}  // namespace perfsift::pipeline
